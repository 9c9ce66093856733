package series

// Promise is what applying a finding's advice should do: move one signal one way. Each
// diagnosis rule states its own (pkg/diagnosis); a verdict checks it against the signal's value
// before and after the change (pkg/verdict's CheckPromise). It lives here, with the signals,
// because both packages read it and neither imports the other.
type Promise struct {
	// Signal is the signal the advice moves.
	Signal Signal
	// Direction is the way it moves when the advice worked.
	Direction Direction
	// Sentence says, for an operator, what should change and why.
	Sentence string
}

// Direction is the way a promised signal moves.
type Direction string

// The directions.
const (
	Up   Direction = "up"
	Down Direction = "down"
)
