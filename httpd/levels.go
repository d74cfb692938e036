package httpd

// Level is the access a route needs. Levels are ordered: admin includes
// read-write, which includes read-only.
type Level int

// Access levels, as Queen names them.
const (
	Public Level = iota
	ReadOnly
	ReadWrite
	Admin
)

func (l Level) String() string {
	switch l {
	case Public:
		return "public"
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	case Admin:
		return "admin"
	}
	return "unknown"
}

// routeLevels is the one table of who may call what, keyed "METHOD /path"
// exactly as registered. It follows Queen where Queen has the route: reads
// are read-only; writes and consuming are read-write; deleting queues and
// groups and everything under /api/v1/system/ is admin.
var routeLevels = map[string]Level{
	"GET /health": Public,

	"POST /api/v1/configure":                            ReadWrite,
	"POST /api/v1/push":                                 ReadWrite,
	"GET /api/v1/pop/queue/:queue":                      ReadWrite,
	"GET /api/v1/pop/queue/:queue/partition/:partition": ReadWrite,
	"GET /api/v1/pop":                                   ReadWrite,
	"POST /api/v1/ack":                                  ReadWrite,
	"POST /api/v1/ack/batch":                            ReadWrite,
	"POST /api/v1/transaction":                          ReadWrite,
	"POST /api/v1/lease/:leaseId/extend":                ReadWrite,

	// Consumer groups: reads read-only, subscription and seeks read-write,
	// every DELETE under /api/v1/consumer-groups/ admin.
	"GET /api/v1/consumer-groups":                                                  ReadOnly,
	"GET /api/v1/consumer-groups/:group":                                           ReadOnly,
	"POST /api/v1/consumer-groups/:group/subscription":                             ReadWrite,
	"POST /api/v1/consumer-groups/:group/queues/:queue/seek":                       ReadWrite,
	"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek": ReadWrite,
	"DELETE /api/v1/consumer-groups/:group":                                        Admin,
	"DELETE /api/v1/consumer-groups/:group/queues/:queue":                          Admin,

	// Snapshots: reads read-only, creating and updating read-write (seeking
	// to one goes through the seek routes), deleting admin.
	"POST /api/v1/consumer-groups/:group/queues/:queue/snapshots": ReadWrite,
	"POST /api/v1/snapshots":         ReadWrite,
	"GET /api/v1/snapshots":          ReadOnly,
	"GET /api/v1/snapshots/:name":    ReadOnly,
	"PUT /api/v1/snapshots/:name":    ReadWrite,
	"DELETE /api/v1/snapshots/:name": Admin,

	// Operator routes: the DLQ and quarantine listings are read-only, a
	// re-drive appends messages, so read-write; a purge destroys them, so
	// admin.
	"GET /api/v1/dlq":          ReadOnly,
	"POST /api/v1/dlq/redrive": ReadWrite,
	"DELETE /api/v1/dlq":       Admin,
	"GET /api/v1/quarantine":   ReadOnly,

	// Restoring a quarantined segment writes bytes an operator repaired
	// by hand into the DLQ: admin.
	"POST /api/v1/quarantine/:id/restore": Admin,

	// Resources: reads read-only, deleting a queue admin.
	"GET /api/v1/resources/overview":         ReadOnly,
	"GET /api/v1/resources/queues":           ReadOnly,
	"GET /api/v1/resources/queues/:queue":    ReadOnly,
	"DELETE /api/v1/resources/queues/:queue": Admin,
	"GET /api/v1/resources/namespaces":       ReadOnly,
	"GET /api/v1/resources/tasks":            ReadOnly,

	// Messages: reads read-only, deleting one read-write.
	"GET /api/v1/messages":                                ReadOnly,
	"GET /api/v1/messages/:partitionId/:transactionId":    ReadOnly,
	"DELETE /api/v1/messages/:partitionId/:transactionId": ReadWrite,

	// Status and analytics: read-only, but refreshing statistics is admin.
	"GET /api/v1/status":                        ReadOnly,
	"GET /api/v1/status/queues":                 ReadOnly,
	"GET /api/v1/status/queues/:queue":          ReadOnly,
	"GET /api/v1/status/queues/:queue/messages": ReadOnly,
	"GET /api/v1/status/analytics":              ReadOnly,
	"GET /api/v1/status/buffers":                ReadOnly,
	"GET /api/v1/analytics/:kind":               ReadOnly,
	"POST /api/v1/stats/refresh":                Admin,

	// Metrics are public: scrapers carry no token.
	"GET /metrics":            Public,
	"GET /metrics/prometheus": Public,

	// Traces: recording is read-write, reading read-only. The one- and
	// two-segment GETs also serve /traces/names and /traces/by-name/:name.
	"POST /api/v1/traces":                            ReadWrite,
	"GET /api/v1/traces/:partitionId":                ReadOnly,
	"GET /api/v1/traces/:partitionId/:transactionId": ReadOnly,

	// Streams: registering a query and committing a cycle write, reading
	// state is read-only.
	"POST /streams/v1/queries":   ReadWrite,
	"POST /streams/v1/state/get": ReadOnly,
	"POST /streams/v1/cycle":     ReadWrite,

	// Maintenance: everything under /api/v1/system/ is admin.
	"GET /api/v1/system/maintenance":      Admin,
	"POST /api/v1/system/maintenance":     Admin,
	"GET /api/v1/system/maintenance/pop":  Admin,
	"POST /api/v1/system/maintenance/pop": Admin,
	"GET /api/v1/system/shared-state":     Admin,
	"GET /api/v1/system/backup":           Admin,

	// Who the caller is: any reader may ask, so the console can hide what
	// the token could not do anyway.
	"GET /api/v1/whoami": ReadOnly,

	// Forwarders reach other brokers with stored tokens: admin only.
	"GET /api/v1/forwarders":               Admin,
	"POST /api/v1/forwarders":              Admin,
	"GET /api/v1/forwarders/:name":         Admin,
	"DELETE /api/v1/forwarders/:name":      Admin,
	"POST /api/v1/forwarders/:name/pause":  Admin,
	"POST /api/v1/forwarders/:name/resume": Admin,
}
