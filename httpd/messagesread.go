package httpd

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

type busStatusOut struct {
	ConsumedBy  int `json:"consumedBy"`
	TotalGroups int `json:"totalGroups"`
}

type messageOut struct {
	ID             string       `json:"id"`
	TransactionID  string       `json:"transactionId"`
	PartitionID    string       `json:"partitionId"`
	QueuePath      string       `json:"queuePath"`
	Queue          string       `json:"queue"`
	Partition      string       `json:"partition"`
	Namespace      string       `json:"namespace"`
	Task           string       `json:"task"`
	Status         string       `json:"status"`
	QueueStatus    *string      `json:"queueStatus"`
	BusStatus      busStatusOut `json:"busStatus"`
	TraceID        *string      `json:"traceId"`
	ProducerSub    *string      `json:"producerSub"`
	QueuePriority  int64        `json:"queuePriority"`
	CreatedAt      string       `json:"createdAt"`
	LeaseExpiresAt *string      `json:"leaseExpiresAt"`
}

type modeOut struct {
	HasQueueMode   bool   `json:"hasQueueMode"`
	BusGroupsCount int    `json:"busGroupsCount"`
	Type           string `json:"type"`
}

func messageJSON(m *combtype.MessageInfo) messageOut {
	queueStatus := m.QueueStatus
	if queueStatus != "" && m.Status == combtype.MessageDeadLetter {
		// As in Queen: a dead letter is one by the queue-mode view too,
		// though that cursor has moved past it.
		queueStatus = combtype.MessageDeadLetter
	}
	return messageOut{ID: m.ID, TransactionID: m.TxnID, PartitionID: m.PartitionID, QueuePath: m.Queue + "/" + m.Partition,
		Queue: m.Queue, Partition: m.Partition, Namespace: m.Namespace, Task: m.Task, Status: m.Status,
		QueueStatus: nullString(queueStatus), BusStatus: busStatusOut{ConsumedBy: m.ConsumedBy, TotalGroups: m.TotalGroups},
		TraceID: nullString(m.TraceID), ProducerSub: nullString(m.ProducerSub), QueuePriority: m.Priority,
		CreatedAt: fmtMilli(m.CreatedAt), LeaseExpiresAt: optTime(m.LeaseExpiresAt)}
}

var messageStatuses = map[string]bool{
	combtype.MessagePending: true, combtype.MessageProcessing: true, combtype.MessageCompleted: true, combtype.MessageDeadLetter: true,
}

func (s *Handler) listMessages(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !messageStatuses[status] {
		s.fail(w, r, &badRequest{"status must be one of pending, processing, completed, dead_letter"})
		return
	}
	from, okFrom := queryTime(q.Get("from"))
	to, okTo := queryTime(q.Get("to"))
	if !okFrom || !okTo {
		s.fail(w, r, &badRequest{"from and to must be RFC 3339 times or YYYY-MM-DD dates"})
		return
	}
	now := s.b.Now()
	f := combtype.MessageFilter{Queue: q.Get("queue"), Partition: q.Get("partition"),
		Namespace: q.Get("ns"), Task: q.Get("task"), Status: status, From: now.Add(-time.Hour), To: now,
		Limit: queryInt(q, "limit", combtype.DefaultMessageLimit), Offset: max(queryInt(q, "offset", 0), 0)}
	if f.Namespace == "" {
		f.Namespace = q.Get("namespace")
	}
	if from != nil {
		f.From = *from
	}
	if to != nil {
		f.To = *to
	}
	if f.Limit <= 0 {
		f.Limit = combtype.DefaultMessageLimit
	}
	f.Limit = min(f.Limit, broker.MaxMessageLimit)
	msgs, mode, err := s.tb(r).MessageList(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]messageOut, len(msgs))
	for i := range msgs {
		out[i] = messageJSON(&msgs[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out,
		"mode": modeOut{HasQueueMode: mode.HasQueueMode, BusGroupsCount: mode.BusGroups, Type: mode.Type}})
}

func (s *Handler) getMessage(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	// One message may be as large as a push: its reply takes room as a
	// pop's does (replybound.go), what a pop may deliver before the
	// lookup and what the reply holds after it.
	var ticket uint64
	room, err := s.replyRoomFor(r.Context(), combtype.MaxPopBytes, 0, &ticket)
	defer func() { s.replyRoom.release(room, ticket) }()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.tb(r).MessageGet(r.Context(), combtype.MessageRef{PartitionID: ps.ByName("partitionId"), TxnID: ps.ByName("transactionId")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if room, err = s.replyRoomFor(r.Context(), len(d.Payload)+4096, room, &ticket); err != nil {
		s.fail(w, r, err)
		return
	}
	consumed := 0
	groups := make([]map[string]any, len(d.Groups))
	for i, g := range d.Groups {
		if g.Consumed {
			consumed++
		}
		groups[i] = map[string]any{"name": g.Group, "consumed": g.Consumed, "leaseExpiresAt": optTime(g.LeaseExpiresAt)}
	}
	o := d.QueueOptions
	// The keys encoding/json writes before "payload" (it sorts a map's),
	// the payload, and the keys after it: the bytes writeJSON wrote of
	// one map with all of them, but the payload, which may be as large
	// as a push, is written from where it lies instead of copied into
	// encoding/json's buffer, which grew to twice its size.
	before, err := json.Marshal(map[string]any{
		"id": d.ID, "partitionId": d.PartitionID, "partition": d.Partition, "namespace": d.Namespace,
		"isEncrypted": d.IsEncrypted, "createdAt": fmtMilli(d.CreatedAt), "errorMessage": nullString(d.ErrorMessage),
		"leaseExpiresAt": optTime(d.LeaseExpiresAt),
		"mode": map[string]any{"hasQueueMode": d.Mode.HasQueueMode, "busGroupsCount": d.Mode.BusGroups,
			"consumedByGroups": consumed, "type": d.Mode.Type},
		"consumerGroups": groups,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	after, err := json.Marshal(map[string]any{
		"transactionId": d.TxnID, "queuePath": d.Queue + "/" + d.Partition, "queue": d.Queue, "task": d.Task,
		"status": d.Status, "traceId": nullString(d.TraceID), "producerSub": nullString(d.ProducerSub),
		"retryCount": d.RetryCount,
		"queueConfig": map[string]any{"leaseTime": o.LeaseTime, "retryLimit": o.RetryLimit, "retryDelay": o.RetryDelay,
			"ttl": o.TTL, "priority": o.Priority},
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	payload := rawBytes(d.Payload)
	const key = `,"payload":`
	setJSONHeaders(w, len(before)-1+len(key)+len(payload)+1+len(after)-1)
	w.WriteHeader(http.StatusOK)
	s.writeReply(w, room, before[:len(before)-1], []byte(key), payload, []byte{','}, after[1:])
}

func (s *Handler) deleteMessage(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	partitionID, txn := ps.ByName("partitionId"), ps.ByName("transactionId")
	found, err := s.tb(r).MessageDelete(r.Context(), combtype.MessageRef{PartitionID: partitionID, TxnID: txn})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	msg := "Message deleted successfully"
	if !found {
		msg = "Message not found"
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": found, "partitionId": partitionID, "transactionId": txn,
		"message": msg})
}
