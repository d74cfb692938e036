// Package migrations holds comb's schema as goose SQL files, embedded so the
// binary carries its own schema and applies it when the store opens.
package migrations

import "embed"

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS
