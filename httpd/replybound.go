package httpd

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// A pop holds what it delivers from its claim, which decodes it, until
// its reply, which copies it into one buffer, is written. A reply holds
// at most combtype.MaxPopBytes of payload, or one message as large as a
// push may carry, and nothing bounded how many were held at once: 100
// pops at once of 4 MiB each took a server to 418 MB, and one message of
// 3 MB delivered at once to 300 parked consumer groups to 300-715 MB.
//
// Replies past bodyStep bytes take room under
// Config.MaxReplyBytesInFlight, as request bodies take room while they
// are read (bodyGate), from before their claim until they are written:
//
//   - before its claim a pop takes half the free room, up to what a pop
//     may deliver, and claims no more payload than that and bodyStep
//     (PopRequest.MaxBytes; the first message whatever its size). While
//     room is plenty a pop takes what it may deliver; when many large
//     replies are under way, later pops claim smaller batches, and the
//     small batches of the usual pop (100 messages of a few hundred
//     bytes is ~25 KB) are not cut at all;
//   - a pop that parks gives its room back while it waits: its claim,
//     made when a change wakes it, takes up to what a pop may deliver;
//   - once claimed, the reply keeps the room its size needs and gives
//     back the rest, or waits for what it lacks (a message larger than
//     its room, a parked pop's claim) until room comes back, its client
//     leaves or replyWait passes. Any one reply may take the whole room,
//     so none waits for ever for its own size.

// DefaultMaxReplyBytesInFlight is Config.MaxReplyBytesInFlight's default.
const DefaultMaxReplyBytesInFlight = 32 << 20

// replyWait is how long a reply waits for room before its pop is answered
// 503 and its lease given back, so the messages go to the next pop.
const replyWait = time.Minute

// errRepliesBusy is a pop whose reply found no room within replyWait.
var errRepliesBusy = errors.New("too many pop reply bytes in flight, retry shortly")

// popRoom takes the room of a pop before its claim, and caps its claim
// to it.
func (s *Handler) popRoom(req *combtype.PopRequest) int64 {
	room := s.replyRoom.takeHalf(combtype.MaxPopBytes - bodyStep)
	req.MaxBytes = bodyStep + room
	return room
}

// parkRoom gives back the room of a pop about to wait.
func (s *Handler) parkRoom(room int64) int64 {
	s.replyRoom.release(room, 0)
	return 0
}

// replyRoomFor makes the room held for a reply, room, what a reply of
// size bytes needs: it gives back what is over, or waits for what is
// missing. It returns the room now held, to give back, with ticket, once
// the reply is written (s.replyRoom.release). Replies waiting for more
// room keep what they hold, so that it does not let in more claims whose
// payloads would wait beside theirs; of those, the one that began waiting
// first (the lowest ticket) may take room past the bound, so that they
// cannot all wait on each other.
func (s *Handler) replyRoomFor(ctx context.Context, size int, room int64, ticket *uint64) (int64, error) {
	need := int64(0)
	if size > bodyStep {
		need = int64(size)
	}
	if need <= room {
		s.replyRoom.release(room-need, 0)
		return need, nil
	}
	// Kept while it waits for the rest: given back, it would let in
	// another claim or lookup, whose decoded payload would then wait
	// beside this one's.
	if err := s.replyRoom.grow(ctx, room, need-room, ticket); err != nil {
		return room, errRepliesBusy
	}
	return need, nil
}

// Replies nobody reads, while another waits for room.
//
// A reply keeps its room until it is written, and a client that reads
// nothing is cut only once it has accepted nothing for WriteStall (a
// minute by default, a pace slow links need: writestall.go). Four such
// clients of 10 MB replies held the room from an honest pop of the same
// size for 58 s. So while a reply waits for room, the replies holding
// room that have seen their client accept nothing for
// Config.ContendedWriteStall are cut (their write deadline set to now),
// which gives their room back and their messages to the next pop
// (releaseUndelivered), as WriteStall's cut does. A client reading at
// any pace a link sustains accepts a chunk of writeStallChunk bytes well
// within it.

// DefaultContendedWriteStall is Config.ContendedWriteStall's default.
const DefaultContendedWriteStall = 5 * time.Second

// roomWrites are the replies being written that hold room.
type roomWrites struct {
	stall time.Duration // Config.ContendedWriteStall
	mu    sync.Mutex
	live  map[*roomWrite]struct{}
}

// roomWrite is one reply being written under its room.
type roomWrite struct {
	w http.ResponseWriter
	// accepted is when (unix nanos) the reply began, or its client last
	// accepted a chunk of it.
	accepted atomic.Int64
	cut      atomic.Bool
}

// errReplyCut is a reply cut to give its room to another.
var errReplyCut = errors.New("reply cut: its client accepted nothing while other replies waited for room")

// writeReply writes body to w. A reply that holds room (it has more than
// bodyStep bytes) is written a writeStallChunk at a time, so that a reply
// waiting for room sees whether its client still accepts any of it.
func (s *Handler) writeReply(w http.ResponseWriter, room int64, body ...[]byte) error {
	if room == 0 {
		for _, b := range body {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	}
	rw := &roomWrite{w: w}
	rw.accepted.Store(time.Now().UnixNano())
	s.roomWrites.mu.Lock()
	s.roomWrites.live[rw] = struct{}{}
	s.roomWrites.mu.Unlock()
	defer func() {
		s.roomWrites.mu.Lock()
		delete(s.roomWrites.live, rw)
		s.roomWrites.mu.Unlock()
	}()
	for _, b := range body {
		for len(b) > 0 {
			if rw.cut.Load() {
				return errReplyCut
			}
			n := min(len(b), writeStallChunk)
			if _, err := w.Write(b[:n]); err != nil {
				return err
			}
			rw.accepted.Store(time.Now().UnixNano())
			b = b[n:]
		}
	}
	return nil
}

// squeeze cuts the replies holding room whose clients have accepted
// nothing for the contended stall. It runs when a reply begins to wait
// for room, and again every half stall while it waits: a cut that lands
// between two chunks, where the next chunk sets its own deadline, is
// made again.
func (rws *roomWrites) squeeze() {
	before := time.Now().Add(-rws.stall).UnixNano()
	rws.mu.Lock()
	defer rws.mu.Unlock()
	for rw := range rws.live {
		if rw.accepted.Load() < before {
			rw.cut.Store(true)
			// Safe beside the write under way: it is the connection's
			// deadline, which a blocked write sees at once.
			http.NewResponseController(rw.w).SetWriteDeadline(time.Now())
		}
	}
}
