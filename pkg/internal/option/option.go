// Package option is how an option left unset takes its default, alike in every package: an
// option's zero value means "unset", and so does a negative one, which no option means.
package option

// PositiveOr is v when it is positive, else def.
func PositiveOr[T ~int | ~int64 | ~float64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
