package seek

import (
	"strings"
	"time"
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

// Subscription modes, as stored in a group's subscription record.
const (
	ModeAll       = "all"
	ModeNew       = "new"
	ModeTimestamp = "timestamp"
)

// Subscription is where a group starts on its first contact with a queue.
type Subscription struct {
	Mode string     // ModeAll, ModeNew or ModeTimestamp
	From *time.Time // ModeTimestamp only
}

// ParseSubscription turns a pop's subscription parameters into a
// Subscription. from (other than "now") beats mode; "now" and the modes
// new / new-only start after the current last message; an unparsable from
// acts as new; any other mode is all. def is the default mode used when
// neither parameter is given.
func ParseSubscription(mode, from, def string) Subscription {
	from = strings.TrimSpace(from)
	switch {
	case strings.EqualFold(from, "now"):
		return Subscription{Mode: ModeNew}
	case from != "":
		t, ok := ParseTime(from)
		if !ok {
			return Subscription{Mode: ModeNew}
		}
		return Subscription{Mode: ModeTimestamp, From: &t}
	}
	if mode == "" {
		mode = def
	}
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "new", "new-only", "new_only":
		return Subscription{Mode: ModeNew}
	default:
		return Subscription{Mode: ModeAll}
	}
}
