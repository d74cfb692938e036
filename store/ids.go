package store

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/google/uuid"
)

// MessageID is the id of the message at offset in the partition whose uuid
// is partitionUUID. No column stores it: it is derived from the position.
//
// It is a UUID of version 8 ("custom"). The first 9 bytes come from a hash
// of the partition's uuid, which is random and never reused, so two
// databases, or a queue deleted and created again under the same name,
// never hand out the same id for different messages. The last 7 bytes are
// the offset, big-endian, so within a partition ids sort in offset order
// (Queen's JavaScript streams runner orders a batch by id). 2^56 offsets
// per partition is more than any device writes.
func MessageID(partitionUUID string, offset int64) string {
	return messageIDs(partitionUUID).at(offset)
}

// messageIDPrefix is the part of a partition's message ids that comes from
// its uuid: a commit hashes it once per partition, not once per message.
type messageIDPrefix [9]byte

func messageIDs(partitionUUID string) messageIDPrefix {
	h := sha256.Sum256([]byte(partitionUUID))
	var p messageIDPrefix
	copy(p[:], h[:9])
	p[6] = 0x80 | p[6]&0x0f // version 8
	p[8] = 0x80 | p[8]&0x3f // RFC 9562 variant
	return p
}

// at is the id of the message at offset.
func (p messageIDPrefix) at(offset int64) string {
	var b [16]byte
	copy(b[:9], p[:])
	var off [8]byte
	binary.BigEndian.PutUint64(off[:], uint64(offset))
	copy(b[9:], off[1:])
	return uuid.UUID(b).String()
}

// newLeaseID is the id of a lease a claim hands out: a UUIDv7, so the ids
// of one commit sort next to each other and after every earlier one. Each
// lease is an entry of cursors_lease, keyed by its id; with random (v4)
// ids a wave of a thousand claims inserted into a thousand places of that
// index, touching nearly every one of its pages, each of which the wave
// journaled (its savepoint) and the commit wrote to the WAL. In time
// order they land on the index's last few pages (BenchmarkWakeManyGroups;
// bench/results/wake-claims-2026-12-02.md). The ids stay opaque to
// clients (docs/wire.md) and keep 62 random bits.
func newLeaseID() string { return newUUID() }
