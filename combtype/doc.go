// Package combtype is the vocabulary of comb's embeddable broker: the
// items, requests, results, options, statuses, limits and errors that a
// program using package broker reads and writes. The store speaks the same
// types, so what a caller passes in is what is written, with no
// conversion in between.
//
// It imports nothing else of comb, as rivertype does for river: a program
// can hold and pass these values without importing the engine.
package combtype

// EncryptionKeySize is the length in bytes of an encryption key (AES-256).
const EncryptionKeySize = 32
