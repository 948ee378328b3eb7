// Package control is the agent's control protocol: HTTP and JSON over a
// unix socket in the state dir, so that the dashboard, plan and gc on the
// node use the running agent instead of starting a second engine. Only
// the socket serves it: the agent's TCP port answers /metrics, /healthz
// and /readyz alone, and a dashboard off the node reads the NodeGC object.
//
// Endpoints (all under /v1, JSON bodies, errors as {"error","code"}):
//
//	GET  /v1/status      pid, start time, version, policy, scheduler state;
//	                     ?brief=true: without the last pass report
//	GET  /v1/snapshot    a snapshot now, with the engine's image records
//	GET  /v1/plan        ?kind=&at=: a snapshot and the engine's plan of it
//	GET  /v1/imagefs     the image filesystem alone
//	GET  /v1/changed     ?since=: whether the containers changed
//	GET  /v1/reports     the latest 16 pass reports, whoever started them
//	                     (items and figures; the plans without their lists)
//	GET  /v1/notices     a stream of notices, one JSON object a line
//	POST /v1/force       {"kind"}: run a pass now
//	POST /v1/preview     {"kind"}: a dry run
//	POST /v1/apply       {"plan"}: apply exactly this plan, re-checked: one
//	                     the agent issued (a preview, /v1/plan) or a part
//	                     of one; the body bounded by the node
//	GET  /v1/journal     the deletion journal's intent and outcome lines
//	POST /v1/pause       {"until","held"}: pause the periodic passes in the
//	                     sender's name; a held pause lasts while its
//	                     request stays open
//	POST /v1/resume, /v1/stop
//
// Commands (POST) are refused to a read-only connection: one whose
// client said so (the Read-Only header, sticky for the connection), or
// every connection of a read-only server. The unix listener serves only
// peers whose SO_PEERCRED uid is root.
package control
