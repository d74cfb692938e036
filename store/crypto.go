package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Encryption at rest. Queues with encryptionEnabled have each frame's
// payload sealed with AES-256-GCM when it is staged into a segment, and
// every read opens it again, so clients never see ciphertext.
//
// The marker lives in the payload itself, not in the queue or the segment,
// so a queue switched on or off later still reads its older frames. A
// stored payload is one of (segment format v1):
//
//	JSON text                    stored as is; JSON never starts with 0x00 or 0x01
//	0x00 | bytes                 a payload that would be mistaken for a marker, escaped
//	0x01 | nonce(12) | sealed    AES-256-GCM, a random nonce per frame, no additional data
//
// The same encoding is used for dead-letter rows and the maintenance push
// buffer. Transaction ids, trace ids and producer subjects stay in clear:
// dedup, acks and traces look them up.
const (
	payloadEscaped = 0x00
	payloadSealed  = 0x01
)

// EncryptionKeySize is the length of an AES-256 key in bytes.
const EncryptionKeySize = 32

// ErrNoEncryptionKey is returned when a stored payload is sealed and the
// store was opened without a key (or with another one).
var ErrNoEncryptionKey = errors.New("payload is encrypted and no matching encryption key is configured")

// payloadCipher seals and opens payloads. cipher.AEAD is safe for
// concurrent use, so the writer and every reader share one.
type payloadCipher struct {
	aead cipher.AEAD
}

func newPayloadCipher(key []byte) (*payloadCipher, error) {
	if len(key) == 0 {
		return nil, nil
	}
	if len(key) != EncryptionKeySize {
		return nil, fmt.Errorf("%w: encryption key is %d bytes, want %d", ErrInvalid, len(key), EncryptionKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	return &payloadCipher{aead: aead}, nil
}

// ParseEncryptionKey decodes a key given as 64 hex characters, the form
// QUEEN_ENCRYPTION_KEY takes. An empty string is no key.
func ParseEncryptionKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != EncryptionKeySize {
		return nil, fmt.Errorf("%w: encryption key must be %d hex characters", ErrInvalid, 2*EncryptionKeySize)
	}
	return key, nil
}

// Encrypting reports whether the store holds an encryption key.
func (s *Store) Encrypting() bool { return s.crypt != nil }

// sealPayload is what stores p for queue q: sealed when q is encrypted and
// a key is configured, else p itself (escaped in the rare case it starts
// with a marker byte). It cannot fail: crypto/rand does not return errors.
func (s *Store) sealPayload(q *Queue, p []byte) []byte {
	if s.crypt != nil && q != nil && q.Options.EncryptionEnabled {
		return s.crypt.seal(p)
	}
	if len(p) > 0 && (p[0] == payloadEscaped || p[0] == payloadSealed) {
		out := make([]byte, 0, len(p)+1)
		return append(append(out, payloadEscaped), p...)
	}
	return p
}

func (c *payloadCipher) seal(p []byte) []byte {
	ns := c.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(p)+c.aead.Overhead())
	out[0] = payloadSealed
	rand.Read(out[1 : 1+ns])
	return c.aead.Seal(out, out[1:1+ns], p, nil)
}

// DecryptPayload returns a stored payload (a frame's, a dead-letter row's)
// as the client pushed it. Readers outside this package that read payload
// columns directly must pass them through it.
func (s *Store) DecryptPayload(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return p, nil
	}
	switch p[0] {
	case payloadEscaped:
		return p[1:], nil
	case payloadSealed:
		if s.crypt == nil {
			return nil, ErrNoEncryptionKey
		}
		ns := s.crypt.aead.NonceSize()
		if len(p) < 1+ns+s.crypt.aead.Overhead() {
			return nil, fmt.Errorf("%w: sealed payload of %d bytes", ErrCorrupt, len(p))
		}
		plain, err := s.crypt.aead.Open(nil, p[1:1+ns], p[1+ns:], nil)
		if err != nil {
			// A wrong key and a damaged payload look the same to GCM.
			return nil, fmt.Errorf("open payload: %w", ErrNoEncryptionKey)
		}
		return plain, nil
	}
	return p, nil
}
