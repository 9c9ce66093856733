package verdict

// Notices merges the notices of the two windows' fetches (baseline first, current second) into
// the verdict's, each naming the window it concerns, once for a notice both windows share, in
// the order they first appear.
func Notices(baseline, current []string) []string {
	in := map[string][2]bool{}
	var order []string
	for i, ns := range [2][]string{baseline, current} {
		for _, n := range ns {
			seen, ok := in[n]
			if !ok {
				order = append(order, n)
			}
			seen[i] = true
			in[n] = seen
		}
	}
	out := make([]string, 0, len(order))
	for _, n := range order {
		switch in[n] {
		case [2]bool{true, true}:
			out = append(out, "both windows: "+n)
		case [2]bool{true, false}:
			out = append(out, "baseline window: "+n)
		default:
			out = append(out, "current window: "+n)
		}
	}
	return out
}
