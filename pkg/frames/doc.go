// Package frames turns the domain's values (signals, findings, timelines, alert and
// recommendation series, the fleet table, requests, explanations, verdicts) into Grafana data
// frames: field names, units, labels, display names, notices and data links. It holds no query
// logic.
//
// Its frames leave it complete, so that the plugin only returns them: each builder takes the
// plan as fetched (the frames' executedQueryString) and the notices of its answer, and a
// diagnosis format's frames are finished by Evaluated (the plan, the shared-evaluation mark in
// the first frame's custom meta, the notice of no series). An explain answer is five frames:
// the explanation (the sentence, the slow stage and the finding that explains it first), the
// stages, the details (shares and metric state), the signals around the request (Around; only
// when the metrics could be read) and the request's interval as annotations; NoRequest is the
// answer without a trace id.
package frames
