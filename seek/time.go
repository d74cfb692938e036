// Package seek decides where a consumer group's cursor goes: where a group
// starts on first contact (subscription modes all / new / timestamp) and,
// later, where a seek moves it.
package seek

import (
	"strings"
	"time"

	"github.com/comb-broker/comb/store"
)

// timeLayouts are the forms a time may arrive in: RFC 3339 with or without
// fraction or offset, and a bare date.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// ParseTime reads a client-supplied time. A time without an offset is UTC.
func ParseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// Start turns a pop's subscription parameters into where a group starts on
// first contact. subscriptionFrom (other than "now") beats subscriptionMode;
// "now" and modes new / new-only start after the current last message; an
// unparsable subscriptionFrom acts as new; any other mode is all. def is the
// server default mode used when neither parameter is given.
func Start(mode, from, def string) store.SubscriptionStart {
	from = strings.TrimSpace(from)
	switch {
	case strings.EqualFold(from, "now"):
		return store.SubscriptionStart{Mode: store.ModeNew}
	case from != "":
		t, ok := ParseTime(from)
		if !ok {
			return store.SubscriptionStart{Mode: store.ModeNew}
		}
		return store.SubscriptionStart{Mode: store.ModeTimestamp, From: &t}
	}
	if mode == "" {
		mode = def
	}
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "new", "new-only", "new_only":
		return store.SubscriptionStart{Mode: store.ModeNew}
	default:
		return store.SubscriptionStart{Mode: store.ModeAll}
	}
}
