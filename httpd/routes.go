package httpd

import (
	"fmt"

	"github.com/julienschmidt/httprouter"
)

// Level is the access a route needs. Levels are ordered: admin includes
// read-write, which includes read-only. The zero Level is no level at all:
// a route left without one is refused when the Server is built.
type Level int

// Access levels, as Queen names them.
const (
	Public Level = iota + 1
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

// route is one row of the route table.
type route struct {
	method, path string
	level        Level
	h            httprouter.Handle
}

// routes is the one table of what the server answers and who may call it.
// Levels follow Queen where Queen has the route: reads are read-only;
// writes and consuming are read-write; deleting queues and groups and
// everything under /api/v1/system/ is admin (docs/auth.md).
func (s *Handler) routes() []route {
	return []route{
		{"GET", "/health", Public, s.health},
		// The API's own description, for generated clients: public, like
		// the console's page, since it holds nothing but the route table.
		{"GET", "/openapi.json", Public, s.openapi},

		// Producing and consuming.
		{"POST", "/api/v1/configure", ReadWrite, s.configure},
		{"POST", "/api/v1/push", ReadWrite, s.push},
		{"GET", "/api/v1/pop/queue/:queue", ReadWrite, s.pop},
		{"GET", "/api/v1/pop/queue/:queue/partition/:partition", ReadWrite, s.pop},
		{"GET", "/api/v1/pop", ReadWrite, s.pop},
		{"POST", "/api/v1/ack", ReadWrite, s.ack},
		{"POST", "/api/v1/ack/batch", ReadWrite, s.ackBatch},
		{"POST", "/api/v1/transaction", ReadWrite, s.transaction},
		{"POST", "/api/v1/lease/:leaseId/extend", ReadWrite, s.extendLease},

		// Consumer groups: reads read-only, subscription and seeks
		// read-write, every DELETE under /api/v1/consumer-groups/ admin.
		// httprouter cannot hold a static "lagging" beside ":group", so the
		// lagging listing is dispatched inside getGroup: as in Queen, a
		// group literally named "lagging" cannot be read with this GET.
		{"GET", "/api/v1/consumer-groups", ReadOnly, s.listGroups},
		{"GET", "/api/v1/consumer-groups/:group", ReadOnly, s.getGroup},
		{"POST", "/api/v1/consumer-groups/:group/subscription", ReadWrite, s.updateSubscription},
		{"POST", "/api/v1/consumer-groups/:group/queues/:queue/seek", ReadWrite, s.seekQueue},
		{"POST", "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek", ReadWrite, s.seekPartition},
		{"DELETE", "/api/v1/consumer-groups/:group", Admin, s.deleteGroup},
		{"DELETE", "/api/v1/consumer-groups/:group/queues/:queue", Admin, s.deleteGroupQueue},

		// Snapshots: reads read-only, creating and updating read-write
		// (seeking to one goes through the seek routes), deleting admin.
		{"POST", "/api/v1/consumer-groups/:group/queues/:queue/snapshots", ReadWrite, s.createGroupSnapshot},
		{"POST", "/api/v1/snapshots", ReadWrite, s.createSnapshot},
		{"GET", "/api/v1/snapshots", ReadOnly, s.listSnapshots},
		{"GET", "/api/v1/snapshots/:name", ReadOnly, s.getSnapshot},
		{"PUT", "/api/v1/snapshots/:name", ReadWrite, s.updateSnapshot},
		{"DELETE", "/api/v1/snapshots/:name", Admin, s.deleteSnapshot},

		// Dead letters and quarantined segments: the listings are
		// read-only, a re-drive appends messages, so read-write; a purge
		// destroys them, so admin. Restoring a quarantined segment writes
		// bytes an operator repaired by hand into the DLQ: admin.
		{"GET", "/api/v1/dlq", ReadOnly, s.listDLQ},
		{"POST", "/api/v1/dlq/redrive", ReadWrite, s.redriveDLQ},
		{"DELETE", "/api/v1/dlq", Admin, s.purgeDLQ},
		{"GET", "/api/v1/quarantine", ReadOnly, s.listQuarantine},
		{"POST", "/api/v1/quarantine/:id/restore", Admin, s.restoreQuarantined},

		// Resources: reads read-only, deleting a queue admin.
		{"GET", "/api/v1/resources/overview", ReadOnly, s.resourcesOverview},
		{"GET", "/api/v1/resources/queues", ReadOnly, s.resourcesQueues},
		{"GET", "/api/v1/resources/queues/:queue", ReadOnly, s.resourcesQueue},
		{"DELETE", "/api/v1/resources/queues/:queue", Admin, s.deleteQueue},
		{"GET", "/api/v1/resources/namespaces", ReadOnly, s.resourcesNamespaces},
		{"GET", "/api/v1/resources/tasks", ReadOnly, s.resourcesTasks},

		// Messages: reads read-only, deleting one read-write.
		{"GET", "/api/v1/messages", ReadOnly, s.listMessages},
		{"GET", "/api/v1/messages/:partitionId/:transactionId", ReadOnly, s.getMessage},
		{"DELETE", "/api/v1/messages/:partitionId/:transactionId", ReadWrite, s.deleteMessage},

		// Status and analytics: read-only, but refreshing statistics is admin.
		{"GET", "/api/v1/status", ReadOnly, s.status},
		{"GET", "/api/v1/status/queues", ReadOnly, s.statusQueues},
		{"GET", "/api/v1/status/queues/:queue", ReadOnly, s.statusQueue},
		{"GET", "/api/v1/status/queues/:queue/messages", ReadOnly, s.statusQueueMessages},
		{"GET", "/api/v1/status/analytics", ReadOnly, s.statusAnalytics},
		{"GET", "/api/v1/status/buffers", ReadOnly, s.statusBuffers},
		{"GET", "/api/v1/analytics/:kind", ReadOnly, s.analytics},
		{"POST", "/api/v1/stats/refresh", Admin, s.statsRefresh},

		// Metrics are public: scrapers carry no token.
		{"GET", "/metrics", Public, s.metricsJSON},
		{"GET", "/metrics/prometheus", Public, s.metricsPrometheus},

		// Maintenance and backup: everything under /api/v1/system/ is admin.
		{"GET", "/api/v1/system/maintenance", Admin, s.getMaintenance},
		{"POST", "/api/v1/system/maintenance", Admin, s.setMaintenance},
		{"GET", "/api/v1/system/maintenance/pop", Admin, s.getPopMaintenance},
		{"POST", "/api/v1/system/maintenance/pop", Admin, s.setPopMaintenance},
		{"GET", "/api/v1/system/shared-state", Admin, s.sharedState},
		{"GET", "/api/v1/system/backup", Admin, s.backup},

		// Traces: recording is read-write, reading read-only. The one- and
		// two-segment GETs also serve /traces/names and /traces/by-name/:name.
		{"POST", "/api/v1/traces", ReadWrite, s.recordTrace},
		{"GET", "/api/v1/traces/:partitionId", ReadOnly, s.traceOne},
		{"GET", "/api/v1/traces/:partitionId/:transactionId", ReadOnly, s.traceTwo},

		// Who the caller is: any reader may ask, so the console can hide
		// what the token could not do anyway.
		{"GET", "/api/v1/whoami", ReadOnly, s.whoami},

		// Streams: registering a query and committing a cycle write,
		// reading state is read-only.
		{"POST", "/streams/v1/queries", ReadWrite, s.streamQueries},
		{"POST", "/streams/v1/state/get", ReadOnly, s.streamStateGet},
		{"POST", "/streams/v1/cycle", ReadWrite, s.streamCycle},
		{"GET", "/api/v1/streams/queries", ReadOnly, s.listStreamQueries},
		{"DELETE", "/api/v1/streams/queries/:name", Admin, s.deleteStreamQuery},

		// Forwarders reach other brokers with stored tokens: admin only.
		{"GET", "/api/v1/forwarders", Admin, s.listForwarders},
		{"POST", "/api/v1/forwarders", Admin, s.createForwarder},
		{"GET", "/api/v1/forwarders/:name", Admin, s.getForwarder},
		{"DELETE", "/api/v1/forwarders/:name", Admin, s.deleteForwarder},
		{"POST", "/api/v1/forwarders/:name/pause", Admin, s.pauseForwarder},
		{"POST", "/api/v1/forwarders/:name/resume", Admin, s.pauseForwarder},
	}
}

// handle registers one route behind its level's guard. A route without a
// level is a programming error, caught by any test that builds a Server.
func (s *Handler) handle(rt route) {
	if rt.level == 0 {
		panic(fmt.Sprintf("httpd: route %s %s has no access level", rt.method, rt.path))
	}
	s.registered = append(s.registered, rt)
	s.router.Handle(rt.method, rt.path, s.guard(rt.level, s.checkIntQuery(rt.h)))
}

// Routes lists every registered route as "METHOD /path/:param", in table
// order.
func (s *Handler) Routes() []string {
	out := make([]string, len(s.registered))
	for i, rt := range s.registered {
		out[i] = rt.method + " " + rt.path
	}
	return out
}

// RouteLevels returns the access level of every route of the table, keyed
// "METHOD /path" as registered.
func RouteLevels() map[string]Level {
	var s *Handler // the table only names handlers; none is called
	levels := map[string]Level{}
	for _, rt := range s.routes() {
		levels[rt.method+" "+rt.path] = rt.level
	}
	return levels
}
