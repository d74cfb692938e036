-- +goose Up
-- id_prefix scopes the transactionIds a push forwarder sends upstream:
-- each is sent as id_prefix || transactionId, so that two devices using the
-- same client-chosen ids ("reading-1") into one upstream queue and
-- partition are not taken for one another's resends by the upstream's
-- dedup. 'none' sends the ids as they are; '' (forwarders stored before
-- this column existed) is given the device's prefix when the forwarder
-- next starts.
ALTER TABLE forwarders ADD COLUMN id_prefix TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE forwarders DROP COLUMN id_prefix;
