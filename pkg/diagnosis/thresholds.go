package diagnosis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Thresholds overrides rule parameters: rule id → parameter name → value. It is the `thresholds`
// object of the data source's jsonData (README, Settings), for example
// {"kv_cache_saturated": {"kv_usage": 0.9, "for": 120}}.
type Thresholds map[string]map[string]float64

// ParseThresholds reads and validates the `thresholds` JSON of the data source settings. Empty
// input or null means no overrides. Every problem is reported, each naming the setting's path.
func ParseThresholds(raw []byte) (Thresholds, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rules map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rules); err != nil {
		return nil, fmt.Errorf("thresholds: not a JSON object of rule id → {parameter: number}: %v", err)
	}
	th := Thresholds{}
	var errs []error
	for _, id := range sortedKeys(rules) {
		rule, ok := ruleByID(id)
		if !ok {
			errs = append(errs, unknownRule(id))
			continue
		}
		var params map[string]json.RawMessage
		if err := json.Unmarshal(rules[id], &params); err != nil || params == nil {
			errs = append(errs, fmt.Errorf("thresholds.%s: must be an object of parameter → number, such as {%q: %s}",
				id, rule.Params[0].Name, num(rule.Params[0].Default)))
			continue
		}
		for _, name := range sortedKeys(params) {
			v, err := parseNumber(params[name])
			if err != nil {
				errs = append(errs, fmt.Errorf("thresholds.%s.%s: %v", id, name, err))
				continue
			}
			if th[id] == nil {
				th[id] = map[string]float64{}
			}
			th[id][name] = v
		}
	}
	errs = append(errs, th.check()...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return th, nil
}

// UnmarshalJSON parses and validates, so that a settings struct with a Thresholds field reports
// the same actionable errors as ParseThresholds.
func (t *Thresholds) UnmarshalJSON(b []byte) error {
	th, err := ParseThresholds(b)
	if err != nil {
		return err
	}
	*t = th
	return nil
}

// Validate checks every override: known rule, known parameter, value in range.
func (t Thresholds) Validate() error { return errors.Join(t.check()...) }

func (t Thresholds) check() []error {
	var errs []error
	for _, id := range sortedKeys(t) {
		rule, ok := ruleByID(id)
		if !ok {
			errs = append(errs, unknownRule(id))
			continue
		}
		for _, name := range sortedKeys(t[id]) {
			p, ok := paramOf(rule, name)
			if !ok {
				errs = append(errs, fmt.Errorf("thresholds.%s: unknown parameter %q%s; its parameters are %s",
					id, name, suggest(name, paramNames(rule)), strings.Join(paramNames(rule), ", ")))
				continue
			}
			if err := p.Kind.check(t[id][name]); err != nil {
				errs = append(errs, fmt.Errorf("thresholds.%s.%s: %v (%s; default %s)", id, name, err, p.Description, num(p.Default)))
			}
		}
		if rule.Escalation != nil {
			r := rule.withThresholds(t[id])
			if esc, base := r.Param(rule.Escalation.Param), r.Param(rule.Escalation.Base); esc > base {
				errs = append(errs, fmt.Errorf("thresholds.%s: %s (%s) must not exceed %s (%s)",
					id, rule.Escalation.Param, num(esc), rule.Escalation.Base, num(base)))
			}
		}
	}
	return errs
}

func parseNumber(raw json.RawMessage) (float64, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return 0, fmt.Errorf("%q is a string; write the number without quotes: %s", x, num(f))
		}
		return 0, fmt.Errorf("%q is a string; write a number", x)
	case nil:
		return 0, errors.New("is null; write a number or remove the parameter to use the default")
	}
	return 0, fmt.Errorf("%s is not a number", strings.TrimSpace(string(raw)))
}

func unknownRule(id string) error {
	return fmt.Errorf("thresholds: unknown rule %q%s; the rules are %s", id, suggest(id, IDs()), strings.Join(IDs(), ", "))
}

func ruleByID(id string) (Rule, bool) {
	if r := byID[id]; r != nil {
		return *r, true
	}
	return Rule{}, false
}

func paramOf(r Rule, name string) (Param, bool) {
	for _, p := range r.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

func paramNames(r Rule) []string {
	out := make([]string, len(r.Params))
	for i, p := range r.Params {
		out[i] = p.Name
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// suggest returns ` (did you mean "x"?)` for the closest known name, if fewer edits than half
// the name's length separate them.
func suggest(name string, known []string) string {
	best, bestD := "", max(2, len(name)/2+1)
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
