package store

import (
	"errors"
	"fmt"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store/segment"
)

// Encryption at rest: payloads of queues with encryptionEnabled are sealed
// by the segment codec (store/segment/crypto.go describes the stored form)
// when they are staged, and opened on every read, so clients never see
// ciphertext. The same form is used for dead-letter rows and the
// maintenance push buffer.

// The vocabulary's key size is the codec's.
var _ [segment.KeySize - combtype.EncryptionKeySize]struct{}
var _ [combtype.EncryptionKeySize - segment.KeySize]struct{}

func newPayloadCipher(key []byte) (*segment.Cipher, error) {
	c, err := segment.NewCipher(key)
	if errors.Is(err, segment.ErrKey) {
		return nil, fmt.Errorf("%w: %w", combtype.ErrInvalid, err)
	}
	return c, err
}

// ParseEncryptionKey decodes a key given as 64 hex characters, the form
// QUEEN_ENCRYPTION_KEY takes. An empty string is no key; anything else is
// an error wrapping ErrInvalid.
func ParseEncryptionKey(s string) ([]byte, error) {
	key, err := segment.ParseKey(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", combtype.ErrInvalid, err)
	}
	return key, nil
}

// Encrypting reports whether the store holds an encryption key.
func (s *Store) Encrypting() bool { return s.crypt != nil }

// sealPayload is what stores p for queue q: sealed when q is encrypted and
// a key is configured, else p itself, escaped if need be.
func (s *Store) sealPayload(q *combtype.Queue, p []byte) []byte {
	if s.crypt != nil && q != nil && q.Options.EncryptionEnabled {
		return segment.Seal(s.crypt, p)
	}
	return segment.Seal(nil, p)
}

// DecryptPayload returns a stored payload (a frame's, a dead-letter row's)
// as the client pushed it. Readers outside this package that read payload
// columns directly must pass them through it.
func (s *Store) DecryptPayload(p []byte) ([]byte, error) {
	plain, err := segment.Open(s.crypt, p)
	return plain, fromCodec(err)
}
