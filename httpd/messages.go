package httpd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// --- configure ---------------------------------------------------------

type configureIn struct {
	Queue     json.RawMessage            `json:"queue"`
	Namespace json.RawMessage            `json:"namespace"`
	Task      json.RawMessage            `json:"task"`
	Options   map[string]json.RawMessage `json:"options"`
}

func parseOptions(in map[string]json.RawMessage) (combtype.QueueOptions, error) {
	o := combtype.DefaultQueueOptions()
	ints := map[string]*int64{
		"leaseTime": &o.LeaseTime, "retryLimit": &o.RetryLimit, "retryDelay": &o.RetryDelay, "maxSize": &o.MaxSize,
		"ttl": &o.TTL, "priority": &o.Priority, "delayedProcessing": &o.DelayedProcessing, "windowBuffer": &o.WindowBuffer,
		"retentionSeconds": &o.RetentionSeconds, "completedRetentionSeconds": &o.CompletedRetentionSeconds,
		"maxWaitTimeSeconds": &o.MaxWaitTimeSeconds, "maxBytes": &o.MaxBytes,
	}
	bools := map[string]*bool{
		"deadLetterQueue": &o.DeadLetterQueue, "dlqAfterMaxRetries": &o.DLQAfterMaxRetries,
		"retentionEnabled": &o.RetentionEnabled, "encryptionEnabled": &o.EncryptionEnabled,
	}
	for key, raw := range in {
		if p := ints[key]; p != nil {
			v, present, ok := rawInt(raw)
			if !ok || v < 0 {
				return o, &badRequest{fmt.Sprintf("options.%s must be a non-negative integer", key)}
			}
			if present {
				*p = v
			}
		} else if p := bools[key]; p != nil {
			v, present, ok := rawBool(raw)
			if !ok {
				return o, &badRequest{fmt.Sprintf("options.%s must be a boolean", key)}
			}
			if present {
				*p = v
			}
		}
	}
	return o, nil
}

func optionsJSON(o combtype.QueueOptions) map[string]any {
	m := map[string]any{
		"priority": o.Priority, "leaseTime": o.LeaseTime, "retryLimit": o.RetryLimit, "retryDelay": o.RetryDelay,
		"maxSize": o.MaxSize, "ttl": o.TTL, "deadLetterQueue": o.DeadLetterQueue, "dlqAfterMaxRetries": o.DLQAfterMaxRetries,
		"delayedProcessing": o.DelayedProcessing, "windowBuffer": o.WindowBuffer, "retentionSeconds": o.RetentionSeconds,
		"completedRetentionSeconds": o.CompletedRetentionSeconds, "retentionEnabled": o.RetentionEnabled,
		"encryptionEnabled": o.EncryptionEnabled, "maxWaitTimeSeconds": o.MaxWaitTimeSeconds,
	}
	if o.MaxBytes > 0 {
		m["maxBytes"] = o.MaxBytes
	}
	return m
}

func (s *Handler) configure(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var in configureIn
	if err := s.readJSON(w, r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	name, present, ok := rawString(in.Queue)
	if !present || !ok {
		s.fail(w, r, &badRequest{"queue is required"})
		return
	}
	ns, _, nsOK := rawString(in.Namespace)
	task, _, taskOK := rawString(in.Task)
	if !nsOK || !taskOK {
		s.fail(w, r, &badRequest{"namespace and task must be strings"})
		return
	}
	opts, err := parseOptions(in.Options)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, p, err := s.tb(r).QueueConfigure(r.Context(), combtype.ConfigureRequest{Queue: name,
		Namespace: ns, Task: task, Options: opts})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"configured": true, "queueId": q.UUID, "partitionId": p.UUID,
		"queue": q.Name, "namespace": q.Namespace, "task": q.Task, "options": optionsJSON(q.Options)})
}

// --- push --------------------------------------------------------------

type pushItemIn struct {
	Queue         json.RawMessage `json:"queue"`
	Partition     json.RawMessage `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID json.RawMessage `json:"transactionId"`
	TraceID       json.RawMessage `json:"traceId"`
}

type pushOut struct {
	Index         int     `json:"index"`
	TxnIDSnake    string  `json:"transaction_id"`
	TransactionID string  `json:"transactionId"`
	Status        string  `json:"status"`
	MessageID     string  `json:"message_id"`
	PartitionID   string  `json:"partition_id"`
	TraceID       *string `json:"trace_id"`
	QueueName     string  `json:"queueName"`
}

// pushItems reads wire items into the broker's; an item whose fields
// have the wrong JSON types fails the whole request. Every rule about the
// values themselves (names, lengths, traceId, payload) is the broker's
// (broker.CheckPushItems), so a push over HTTP and one from Go are refused
// alike, with the same words.
func pushItems(in []pushItemIn, producerSub string) ([]combtype.PushItem, error) {
	items := make([]combtype.PushItem, len(in))
	for i := range in {
		it := &in[i]
		q, present, ok := rawString(it.Queue)
		if !present || !ok {
			return nil, &badRequest{"Queue must be a string"}
		}
		p, _, ok := rawString(it.Partition)
		if !ok {
			return nil, &badRequest{"Partition must be a string"}
		}
		txn, _, ok := rawString(it.TransactionID)
		if !ok {
			return nil, &badRequest{"TransactionId must be a string"}
		}
		trace, _, ok := rawString(it.TraceID)
		if !ok {
			return nil, &badRequest{"TraceId must be a string"}
		}
		payload := []byte(it.Payload)
		if len(payload) == 0 {
			payload = []byte("null")
		}
		items[i] = combtype.PushItem{Queue: q, Partition: p, Payload: payload, TxnID: txn, TraceID: trace, ProducerSub: producerSub}
	}
	return items, nil
}

func pushResultsJSON(results []combtype.PushResult) []pushOut {
	out := make([]pushOut, len(results))
	for i, res := range results {
		out[i] = pushOut{Index: i, TxnIDSnake: res.TxnID, TransactionID: res.TxnID, Status: res.Status,
			MessageID: res.MessageID, PartitionID: res.PartitionID, TraceID: nullString(res.TraceID), QueueName: res.Queue}
	}
	return out
}

func (s *Handler) push(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	raw, err := s.readPush(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, err := pushItems(raw, producerSub(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	results, err := s.tb(r).Push(r.Context(), items)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := appendPushResults(s.replies.get(256*len(results)), results)
	writePushReply(w, body)
	s.replies.put(body)
}

// jsonContentType is the Content-Type of every push reply, one slice for
// all: net/http copies the handler's header when it writes it, and
// Header.Set and Header.Add replace the slice or grow a copy, never write
// into it.
var jsonContentType = []string{"application/json"}

// pushReplyBuffered is net/http's response buffer (bufferBeforeChunkingSize):
// a reply shorter than it is still whole in the buffer when the handler
// returns, and net/http then names its length itself.
const pushReplyBuffered = 2048

// writePushReply answers body, the encoded results, with 201. It sets what
// writeJSONBytes sets without a value allocated per reply for the common,
// short reply: a push of one message answers ~250 bytes, and the header
// values were three of its allocations. A longer reply names its length,
// so it goes out in one piece instead of chunked.
func writePushReply(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if len(body) >= pushReplyBuffered {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

// producerSub is the verified subject of the caller; "" without auth.
func producerSub(ctx interface{ Value(any) any }) string {
	sub, _ := ctx.Value(subjectKey{}).(string)
	return sub
}

type subjectKey struct{}

// --- pop ---------------------------------------------------------------

type popMessageOut struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Queue         string          `json:"queue"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	Data          json.RawMessage `json:"data"`
	CreatedAt     string          `json:"createdAt"`
	TraceID       *string         `json:"traceId"`
	ProducerSub   *string         `json:"producerSub"`
	RetryCount    int64           `json:"retryCount"`
}

type popOut struct {
	Success           bool            `json:"success"`
	Queue             string          `json:"queue"`
	Partition         string          `json:"partition"`
	PartitionID       string          `json:"partitionId"`
	LeaseID           string          `json:"leaseId"`
	ConsumerGroup     string          `json:"consumerGroup"`
	PartitionsClaimed int             `json:"partitionsClaimed"`
	Messages          []popMessageOut `json:"messages"`
}

// DefaultPopTimeout is the long-poll budget when a pop names none.
const DefaultPopTimeout = 30 * time.Second

// pop serves a pop. Its frame stays on the stack of the goroutine while
// a long-poll waits, so reading the request and writing the reply are
// done in functions of their own (see broker.Broker.Pop).
func (s *Handler) pop(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var req combtype.PopRequest
	if err := readPopRequest(&req, r, ps); err != nil {
		s.fail(w, r, err)
		return
	}
	// An autoAck pop is claimed under a lease and acknowledged only once
	// its reply is written: acknowledged in the claim, a batch whose client
	// left while it committed (a long-poll cancelled at its deadline) was
	// lost, since there was no lease to give back.
	autoAck := req.AutoAck
	req.AutoAck = false
	ctx := r.Context()
	room := s.popRoom(&req)
	var parked *parkedConn
	if req.Wait && s.parking != nil {
		// If it waits, it waits outside net/http (parking.go), which then
		// no longer cancels the request's context when the client leaves:
		// the watch of its connection does.
		var left context.CancelFunc
		ctx, left = context.WithCancel(ctx)
		defer left()
		req.OnPark = func() {
			room = s.parkRoom(room)
			parked = s.parking.take(w, r, left)
		}
	} else if req.Wait {
		req.OnPark = func() { room = s.parkRoom(room) }
	}
	res, err := s.tb(r).Pop(ctx, req)
	out := w
	if parked != nil {
		defer parked.finish()
		out = parked
	}
	s.replyPop(ctx, out, r, res, err, autoAck, room)
}

// readPopRequest reads a pop's request from its path and query.
func readPopRequest(req *combtype.PopRequest, r *http.Request, ps httprouter.Params) error {
	q := r.URL.Query()
	*req = combtype.PopRequest{
		Queue:            ps.ByName("queue"),
		Partition:        ps.ByName("partition"),
		Namespace:        q.Get("namespace"),
		Task:             q.Get("task"),
		Group:            q.Get("consumerGroup"),
		Batch:            queryInt(q, "batch", 1),
		Partitions:       queryInt(q, "partitions", 1),
		AutoAck:          queryBool(q, "autoAck"),
		SubscriptionMode: q.Get("subscriptionMode"),
		SubscriptionFrom: q.Get("subscriptionFrom"),
		Wait:             queryBool(q, "wait"),
	}
	timeout := int64(queryInt(q, "timeout", int(DefaultPopTimeout/time.Millisecond)))
	if err := broker.CheckPopTimeout(timeout); err != nil {
		return err // checked before it is turned into a Duration
	}
	req.Timeout = time.Duration(timeout) * time.Millisecond
	if req.Queue == "" && req.Namespace == "" && req.Task == "" && strings.HasSuffix(r.URL.Path, "/pop") {
		return &badRequest{"namespace or task is required"}
	}
	return nil
}

// replyPop answers a pop with what Pop returned; ctx is the one the pop
// waited with.
func (s *Handler) replyPop(ctx context.Context, w http.ResponseWriter, r *http.Request, res *combtype.PopResult, err error, autoAck bool,
	room int64) {
	var ticket uint64
	defer func() { s.replyRoom.release(room, ticket) }()
	if err != nil {
		if ctx.Err() != nil {
			return // the client left; nothing was claimed for it
		}
		s.fail(w, r, err)
		return
	}
	if len(res.Messages) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if ctx.Err() != nil {
		// The client left while the claim committed: its lease goes back
		// now instead of holding the partitions for leaseTime.
		s.releaseUndelivered(r, res.LeaseID)
		return
	}
	leaseID := res.LeaseID
	if autoAck {
		// The reply carries no lease, as before: nothing for the client
		// to ack or extend.
		res.LeaseID = ""
		for i := range res.Messages {
			res.Messages[i].LeaseID = ""
		}
	}
	size := 256
	for i := range res.Messages {
		size += 400 + len(res.Messages[i].Payload)
	}
	if room, err = s.replyRoomFor(ctx, size, room, &ticket); err != nil {
		s.releaseUndelivered(r, leaseID)
		if ctx.Err() == nil {
			s.fail(w, r, err)
		}
		return
	}
	body := appendPop(s.replies.get(size), res)
	setJSONHeaders(w, len(body))
	w.WriteHeader(http.StatusOK)
	err = s.writeReply(w, room, body)
	s.replies.put(body)
	if err != nil {
		s.releaseUndelivered(r, leaseID)
		return
	}
	if autoAck {
		s.ackDelivered(r, res, leaseID)
	}
}

// ackDelivered acknowledges an autoAck pop whose reply was written. It
// runs whether or not the client is still there: the reply is out.
func (s *Handler) ackDelivered(r *http.Request, res *combtype.PopResult, leaseID string) {
	items := make([]combtype.AckItem, len(res.Messages))
	for i, m := range res.Messages {
		items[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: leaseID}
	}
	results, err := s.tb(r).Ack(context.WithoutCancel(r.Context()), withGroup(items, res.Group))
	if err == nil {
		for _, ar := range results {
			if ar.Err != nil {
				err = ar.Err
				break
			}
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, combtype.ErrInvalidLease), errors.Is(err, combtype.ErrMessageNotFound):
		// The lease ended before the reply was out (a client reading it
		// slower than the queue's leaseTime), or the message was
		// deleted meanwhile: a client's doing, not a server fault. What
		// is left of the batch is delivered again: at least once.
		s.log.Warn("an autoAck pop's reply took longer than its lease; its messages are delivered again",
			"leaseId", leaseID, "group", res.Group, "queue", res.Queue, "err", err)
	default:
		s.log.Error("acknowledging an autoAck pop", "leaseId", leaseID, "err", err)
	}
}

// releaseUndelivered gives back the lease of a pop reply that could not be
// written; an autoAck reply holds none.
func (s *Handler) releaseUndelivered(r *http.Request, leaseID string) {
	if leaseID == "" {
		return
	}
	if _, err := s.tb(r).LeaseRelease(context.WithoutCancel(r.Context()), leaseID); err != nil {
		s.log.Error("releasing the lease of an undelivered pop", "leaseId", leaseID, "err", err)
	}
}

// popJSON is the reply appendPop encodes, as a struct.
func popJSON(res *combtype.PopResult) popOut {
	out := popOut{Success: true, Queue: res.Queue, Partition: res.Partition, PartitionID: res.PartitionID,
		LeaseID: res.LeaseID, ConsumerGroup: res.Group, PartitionsClaimed: res.PartitionsClaimed,
		Messages: make([]popMessageOut, len(res.Messages))}
	for i, m := range res.Messages {
		out.Messages[i] = popMessageOut{ID: m.ID, TransactionID: m.TxnID, PartitionID: m.PartitionID, Partition: m.Partition,
			Queue: m.Queue, LeaseID: m.LeaseID, ConsumerGroup: m.Group, Data: m.Payload, CreatedAt: fmtMicro(m.CreatedAt),
			TraceID: nullString(m.TraceID), ProducerSub: nullString(m.ProducerSub), RetryCount: m.RetryCount}
	}
	return out
}

// --- ack ---------------------------------------------------------------

type ackIn struct {
	TransactionID json.RawMessage `json:"transactionId"`
	PartitionID   json.RawMessage `json:"partitionId"`
	LeaseID       json.RawMessage `json:"leaseId"`
	Status        json.RawMessage `json:"status"`
	Error         json.RawMessage `json:"error"`
	ConsumerGroup json.RawMessage `json:"consumerGroup"`
}

type ackOut struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	QueueName     *string `json:"queueName"`
	PartitionName *string `json:"partitionName"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
}

func (a *ackIn) item() (combtype.AckItem, error) {
	return a.itemReusing(nil)
}

// ackStrings keeps the strings the last acknowledgment of a batch decoded
// for the fields its neighbours mostly repeat (a batch's partitionId,
// leaseId and status), so that an equal value is not allocated again.
type ackStrings struct {
	part, lease, status, group lastString
}

type lastString struct {
	raw json.RawMessage
	s   string
}

// get is rawString(raw), reusing the last string when raw is the same.
func (l *lastString) get(raw json.RawMessage) (s string, present, ok bool) {
	if l == nil {
		return rawString(raw)
	}
	if l.raw != nil && bytes.Equal(raw, l.raw) {
		return l.s, true, true
	}
	s, present, ok = rawString(raw)
	if present && ok {
		l.raw, l.s = raw, s
	}
	return s, present, ok
}

// itemReusing is item, with the strings of last reused (nil for none).
func (a *ackIn) itemReusing(last *ackStrings) (combtype.AckItem, error) {
	var lp, ll, ls, lg *lastString
	if last != nil {
		lp, ll, ls, lg = &last.part, &last.lease, &last.status, &last.group
	}
	txn, present, ok := rawString(a.TransactionID)
	if !present || !ok || txn == "" {
		return combtype.AckItem{}, &badRequest{"transactionId is required"}
	}
	part, present, ok := lp.get(a.PartitionID)
	if !present || !ok || part == "" {
		return combtype.AckItem{}, &badRequest{"partitionId is required to ensure message uniqueness"}
	}
	lease, _, ok1 := ll.get(a.LeaseID)
	status, _, ok2 := ls.get(a.Status)
	msg, _, ok3 := rawString(a.Error)
	group, _, ok4 := lg.get(a.ConsumerGroup)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return combtype.AckItem{}, &badRequest{"leaseId, status, error and consumerGroup must be strings"}
	}
	return combtype.AckItem{TxnID: txn, PartitionID: part, LeaseID: lease, Status: status, Error: msg, Group: group}, nil
}

func ackResultsJSON(results []combtype.AckResult) []ackOut {
	out := make([]ackOut, len(results))
	for i, res := range results {
		out[i] = ackOut{Index: i, TransactionID: res.TxnID, Success: res.Success, Error: nullString(itemErrorText(res.Err)),
			QueueName: nullString(res.Queue), PartitionName: nullString(res.Partition), LeaseReleased: res.LeaseReleased, DLQ: res.DLQ}
	}
	return out
}

func (s *Handler) ack(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	in, err := s.readAck(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	it, err := in.item()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	results, err := s.tb(r).Ack(r.Context(), []combtype.AckItem{it})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := appendAckResults(s.replies.get(160*len(results)), results)
	writeJSONBytes(w, http.StatusOK, body)
	s.replies.put(body)
}

// ackBatchItems checks a batch ack as decoded: the batch's consumerGroup,
// then each acknowledgment.
func ackBatchItems(acks []ackIn, rawGroup json.RawMessage) (string, []combtype.AckItem, error) {
	group, _, ok := rawString(rawGroup)
	if !ok {
		return "", nil, &badRequest{"consumerGroup must be a string"}
	}
	items := make([]combtype.AckItem, len(acks))
	var last ackStrings
	for i := range acks {
		it, err := acks[i].itemReusing(&last)
		if err != nil {
			return "", nil, err
		}
		items[i] = it
	}
	// The batch's group applies to every item, null meaning queue mode.
	if group == "" {
		group = combtype.QueueModeGroup
	}
	return group, items, nil
}

func (s *Handler) ackBatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	group, items, err := s.ackBatchRequest(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	results, err := s.tb(r).Ack(r.Context(), withGroup(items, group))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := appendAckResults(s.replies.get(160*len(results)), results)
	writeJSONBytes(w, http.StatusOK, body)
	s.replies.put(body)
}

// --- transaction -------------------------------------------------------

type txOpIn struct {
	Type json.RawMessage `json:"type"`
	ackIn
	Items json.RawMessage `json:"items"`
}

func (s *Handler) transaction(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	body, end := s.readWireBody(w, r)
	raw, requiredLeases, ok, err := decodeTransaction(body, end)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.fail(w, r, &badRequest{"operations array required"})
		return
	}
	if len(raw) == 0 {
		s.fail(w, r, &badRequest{"operations array cannot be empty"})
		return
	}
	// requiredLeases are checked for shape only, as Queen does: Queen's Go
	// client (and queenctl through it) sends them empty, and an ack op
	// without a leaseId is bounded by the ack rule whoever sends it
	// (docs/wire.md, "The ack rule").
	if len(requiredLeases) > 0 && string(requiredLeases) != "null" {
		if ok, _ := stringsIn(requiredLeases, func(string) error { return nil }); !ok {
			s.fail(w, r, &badRequest{"requiredLeases must be an array of strings"})
			return
		}
	}
	txID := uuid.NewString()
	refuse := func(msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"transactionId": txID, "success": false, "error": msg, "results": []any{}})
	}
	ops := make([]combtype.TxOp, len(raw))
	count := 0 // as broker.Transaction counts: an op, and its items past the first
	for i := range raw {
		typ, _, _ := rawString(raw[i].Type)
		ops[i].Type = typ
		switch typ {
		case "ack":
			it, err := raw[i].item()
			if err != nil {
				refuse("ACK operation failed: " + err.Error())
				return
			}
			ops[i].Ack = it
		case "push":
			items, err := pushItemsIn(raw[i].Items)
			if errors.Is(err, errNotItems) {
				refuse("PUSH operation failed: items array is required")
				return
			}
			if err != nil {
				refuse("PUSH operation failed: " + err.Error())
				return
			}
			// Counted as each op is read, so that 20,000 ops of 10,000
			// items each are not all made before the broker counts them.
			if count += max(len(items)-1, 0); count+len(raw) > broker.MaxTransactionOps {
				s.fail(w, r, broker.TooMany("operations", broker.MaxTransactionOps))
				return
			}
			pi, err := pushItems(items, producerSub(r.Context()))
			if err != nil {
				refuse("PUSH operation failed: " + err.Error())
				return
			}
			ops[i].Items = pi
		default:
			refuse(fmt.Sprintf("Unknown operation type: %s", typ))
			return
		}
	}
	results, err := s.tb(r).Transaction(r.Context(), ops)
	var txErr *combtype.TxError
	if errors.As(err, &txErr) {
		refuse(txRefusal(txErr))
		return
	}
	var inErr *broker.InputError
	if errors.As(err, &inErr) {
		refuse(inErr.Msg) // worded as Queen words a refused step
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(results))
	for i, res := range results {
		switch {
		case res.Ack != nil:
			out = append(out, map[string]any{"index": i, "type": "ack", "success": true, "transactionId": res.Ack.TxnID,
				"error": nil, "dlq": res.Ack.DLQ})
		default:
			for _, p := range res.Pushes {
				out = append(out, map[string]any{"index": i, "type": "push", "success": true, "transactionId": p.TxnID,
					"messageId": p.MessageID, "partitionId": p.PartitionID, "queueName": p.Queue})
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"transactionId": txID, "success": true, "results": out})
}

// --- lease -------------------------------------------------------------

func (s *Handler) extendLease(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var in struct {
		Seconds json.RawMessage `json:"seconds"`
	}
	if err := s.readJSON(w, r, &in); err != nil && !errors.Is(err, errEmptyBody) {
		s.fail(w, r, err)
		return
	}
	secs, present, ok := rawInt(in.Seconds)
	if !ok || secs < 0 {
		s.fail(w, r, &badRequest{"seconds must be a non-negative integer"})
		return
	}
	if !present || secs == 0 {
		secs = 60
	}
	if err := broker.CheckLeaseExtension(secs); err != nil {
		s.fail(w, r, err) // checked before it is turned into a Duration
		return
	}
	leaseID := ps.ByName("leaseId")
	res, err := s.tb(r).LeaseExtend(r.Context(), leaseID, time.Duration(secs)*time.Second)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	item := map[string]any{"index": 0, "leaseId": leaseID, "success": res.Success, "error": nullString(itemErrorText(res.Err)), "expiresAt": nil}
	if res.Success {
		item["expiresAt"] = fmtMilli(res.ExpiresAt)
	}
	writeJSON(w, http.StatusOK, []any{item})
}

// withGroup sets every item's group to group, unless group is "" (each
// item keeps its own): the group a route names applies to all its acks.
func withGroup(items []combtype.AckItem, group string) []combtype.AckItem {
	if group != "" {
		for i := range items {
			items[i].Group = group
		}
	}
	return items
}

// txRefusal words a refused transaction as Queen does.
func txRefusal(e *combtype.TxError) string {
	switch e.Op {
	case "ack":
		return "ACK operation failed: " + cmp.Or(itemErrorText(e.Err), "invalid status")
	case "push":
		return "PUSH operation failed: " + e.Err.Error()
	}
	return "Unknown operation type: " + e.Op
}
