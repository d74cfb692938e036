package store

// MessageID is the id of the message at offset of the partition
// partitionUUID in a database comb created (no epoch of a copy).
func MessageID(partitionUUID string, offset int64) string {
	return messageID("", partitionUUID, offset)
}
