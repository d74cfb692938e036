package segment

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

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// Errors of the payload encoding.
var (
	// ErrNoKey is returned by Open for a sealed payload when no key, or
	// another key, is configured.
	ErrNoKey = errors.New("payload is encrypted and no matching encryption key is configured")
	// ErrKey is returned by NewCipher and ParseKey for a key of the wrong
	// size or form.
	ErrKey = errors.New("bad encryption key")
)

// Cipher seals and opens payloads. It is safe for concurrent use, so the
// writer and every reader share one.
type Cipher struct {
	aead cipher.AEAD
}

// NewCipher returns the cipher of a KeySize-byte key; a nil or empty key
// is no cipher (nil, nil).
func NewCipher(key []byte) (*Cipher, error) {
	if len(key) == 0 {
		return nil, nil
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w: encryption key is %d bytes, want %d", ErrKey, len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	return &Cipher{aead: aead}, nil
}

// ParseKey decodes a key given as 2*KeySize hex characters, the form
// QUEEN_ENCRYPTION_KEY takes. An empty string is no key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("%w: encryption key must be %d hex characters", ErrKey, 2*KeySize)
	}
	return key, nil
}

// Seal returns p as stored: sealed with c, or, when c is nil, p itself
// (escaped in the rare case it starts with a marker byte). It cannot fail:
// crypto/rand does not return errors.
func Seal(c *Cipher, p []byte) []byte {
	if c != nil {
		ns := c.aead.NonceSize()
		out := make([]byte, 1+ns, 1+ns+len(p)+c.aead.Overhead())
		out[0] = payloadSealed
		rand.Read(out[1 : 1+ns])
		return c.aead.Seal(out, out[1:1+ns], p, nil)
	}
	if len(p) > 0 && (p[0] == payloadEscaped || p[0] == payloadSealed) {
		out := make([]byte, 0, len(p)+1)
		return append(append(out, payloadEscaped), p...)
	}
	return p
}

// Open returns a stored payload as it was pushed. A sealed payload needs
// c: without it, or with another key, it is ErrNoKey; one too short to be
// sealed is ErrCorrupt.
func Open(c *Cipher, p []byte) ([]byte, error) {
	if len(p) == 0 {
		return p, nil
	}
	switch p[0] {
	case payloadEscaped:
		return p[1:], nil
	case payloadSealed:
		if c == nil {
			return nil, ErrNoKey
		}
		ns := c.aead.NonceSize()
		if len(p) < 1+ns+c.aead.Overhead() {
			return nil, fmt.Errorf("%w: sealed payload of %d bytes", ErrCorrupt, len(p))
		}
		plain, err := c.aead.Open(nil, p[1:1+ns], p[1+ns:], nil)
		if err != nil {
			// A wrong key and a damaged payload look the same to GCM.
			return nil, fmt.Errorf("open payload: %w", ErrNoKey)
		}
		return plain, nil
	}
	return p, nil
}
