package series

// JoinedSignal is a signal whose state each request is joined with, and the direction in
// which it gets worse.
type JoinedSignal struct {
	Signal Signal
	// LowerIsWorse: the worst value while a request ran is the lowest (hit and acceptance
	// rates); otherwise it is the highest.
	LowerIsWorse bool
}

// Joined are the signals whose state each request gets (pkg/correlate's join), in the order
// of its states: the plans fetch them for every query that joins requests, and the frames
// show them in this order.
var Joined = []JoinedSignal{
	{Signal: KVUsage},
	{Signal: Running},
	{Signal: Waiting},
	{Signal: WaitingRatio},
	{Signal: PreemptionRate},
	{Signal: PrefixCacheHitRate, LowerIsWorse: true},
	{Signal: SpecAcceptanceRate, LowerIsWorse: true},
}

// JoinSignals returns what a request join needs fetched: the joined signals and the request
// rate that its coverage is counted from.
func JoinSignals() []Signal {
	out := make([]Signal, 0, len(Joined)+1)
	for _, j := range Joined {
		out = append(out, j.Signal)
	}
	return append(out, RequestRate)
}
