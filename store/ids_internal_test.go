package store

import "testing"

// BenchmarkMessageIDs names the 100 messages of one partition in a commit:
// hashed once for all (as a commit does) against once each.
func BenchmarkMessageIDs(b *testing.B) {
	const p = "0192f0c4-8c1e-7a3b-9d2e-5f6a7b8c9d0e"
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			for off := range int64(100) {
				_ = MessageID(p, off)
			}
		}
	})
	b.Run("once", func(b *testing.B) {
		for b.Loop() {
			ids := messageIDs("", p)
			for off := range int64(100) {
				_ = ids.at(off)
			}
		}
	})
}
