package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
)

// liveInstances are the instances of a timeline answer (one frame per instance and model),
// and the findings still firing at its last step.
func liveInstances(timeline data.Frames, findings []row) ([]instanceKey, []row) {
	var keys []instanceKey
	firing := map[[3]string]bool{}
	for _, f := range timeline {
		added := false
		for _, fld := range f.Fields {
			if fld.Type() != data.FieldTypeString {
				continue
			}
			k := instanceKey{Instance: fld.Labels["instance"], Model: fld.Labels["model_name"]}
			if !added {
				keys, added = append(keys, k), true
			}
			if fld.Len() > 0 && fld.At(fld.Len()-1).(string) == "firing" {
				firing[[3]string{k.Instance, k.Model, fld.Name}] = true
			}
		}
	}
	var active []row
	for _, f := range findings {
		if firing[[3]string{str(f, "instance"), str(f, "model_name"), str(f, "rule")}] {
			active = append(active, f)
		}
	}
	return keys, active
}

// liveSince keeps, for each finding still firing, the earliest start a tick saw: each tick's
// evaluation reaches back only its lookback, so a long run's own start moves forward with it.
type liveSince map[[3]string]string

// update sets each active finding's time to the earliest start seen while it kept firing, and
// forgets the findings no longer active.
func (s liveSince) update(active []row) {
	seen := map[[3]string]bool{}
	for _, f := range active {
		k := [3]string{str(f, "instance"), str(f, "model_name"), str(f, "rule")}
		seen[k] = true
		if prev, ok := s[k]; ok && prev < str(f, "time") {
			f["time"] = prev
		}
		s[k] = str(f, "time")
	}
	for k := range s {
		if !seen[k] {
			delete(s, k)
		}
	}
}

// liveRow is one instance in the live table: its headline among the findings firing now,
// or none.
type liveRow struct {
	key      instanceKey
	headline row
}

// outranksLive orders an instance's firing findings for its row: the plugin's headline, then
// primary before secondary, then the diagnosis's headline order of rules.
func outranksLive(a, b row) bool {
	ha, _ := a["headline"].(bool)
	hb, _ := b["headline"].(bool)
	if ha != hb {
		return ha
	}
	if pa, pb := str(a, "secondary_to") == "", str(b, "secondary_to") == ""; pa != pb {
		return pa
	}
	return diagnosis.HeadlineRank(str(a, "rule")) < diagnosis.HeadlineRank(str(b, "rule"))
}

// worseRow orders the table's rows: the more severe headline, then the rule that ranks first
// for a headline, then the longer-firing, then by instance and model; instances without a
// firing finding last.
func worseRow(a, b liveRow) int {
	if a.headline != nil && b.headline != nil {
		sa, sb := severityRank[str(a.headline, "severity")], severityRank[str(b.headline, "severity")]
		if sa != sb {
			return sb - sa
		}
		ra, rb := diagnosis.HeadlineRank(str(a.headline, "rule")), diagnosis.HeadlineRank(str(b.headline, "rule"))
		if ra != rb {
			return ra - rb
		}
		if c := strings.Compare(str(a.headline, "time"), str(b.headline, "time")); c != 0 {
			return c
		}
	} else if (a.headline == nil) != (b.headline == nil) {
		if a.headline != nil {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.key.Instance, b.key.Instance); c != 0 {
		return c
	}
	return strings.Compare(a.key.Model, b.key.Model)
}

// renderLive is the live table at now: a header line (the time, the instances, the firing
// findings), then one row per instance, most severe first, with its headline's rule,
// severity, how long it has fired and the flag to change. Every line fits in width; with a
// height (0: none), the table leaves the terminal's last line free, and the least severe rows
// that do not fit are counted on a last line instead (a redraw that scrolled would not land
// back on its first line).
func renderLive(keys []instanceKey, active []row, width, height int, now time.Time) string {
	rows := make([]liveRow, len(keys))
	for i, k := range keys {
		rows[i].key = k
		for _, f := range active {
			if str(f, "instance") == k.Instance && str(f, "model_name") == k.Model &&
				(rows[i].headline == nil || outranksLive(f, rows[i].headline)) {
				rows[i].headline = f
			}
		}
	}
	slices.SortStableFunc(rows, worseRow)
	var b strings.Builder
	b.WriteString(fit(fmt.Sprintf("vllm-diagnose --watch %s: %d instance(s), %d finding(s) firing",
		now.UTC().Format("2006-01-02 15:04:05Z"), len(keys), len(active)), width) + "\n")
	if len(keys) == 0 {
		b.WriteString(fit("no vLLM instance in the range", width) + "\n")
		return b.String()
	}
	var hidden []liveRow
	// Lines: the header, the column titles, the rows, the terminal's last line left free.
	if room := height - 3; height > 0 && len(rows) > room {
		room = max(room-1, 1) // the line that counts the rest
		rows, hidden = rows[:room], rows[room:]
	}
	cells := [][]string{{"INSTANCE", "MODEL", "SEVERITY", "RULE", "SINCE", "CHANGE"}}
	for _, r := range rows {
		if r.headline == nil {
			cells = append(cells, []string{r.key.Instance, r.key.Model, "ok", "-", "-", "-"})
			continue
		}
		cells = append(cells, []string{r.key.Instance, r.key.Model, str(r.headline, "severity"), str(r.headline, "rule"),
			since(str(r.headline, "time"), now), change(r.headline)})
	}
	for _, line := range columns(cells, width) {
		b.WriteString(line + "\n")
	}
	if len(hidden) > 0 {
		firing := 0
		for _, r := range hidden {
			if r.headline != nil {
				firing++
			}
		}
		b.WriteString(fit(fmt.Sprintf("… %d more instance(s) below the terminal's height: %d firing, %d ok", len(hidden), firing, len(hidden)-firing), width) + "\n")
	}
	return b.String()
}

// since is how long ago start was, to the second: 45s, 12m05s, 3h20m.
func since(start string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, start)
	if err != nil {
		return "-"
	}
	d := max(now.Sub(t), 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// change is a finding's advice as a flag: "lower --max-num-seqs to 128", the flag alone when
// there is no value, "-" when the rule names none.
func change(f row) string {
	flag := str(f, "flag")
	if flag == "" {
		return "-"
	}
	out := strings.TrimSpace(str(f, "change") + " " + flag)
	if v, ok := f["recommended"].(float64); ok {
		out += " to " + strconv.FormatFloat(v, 'f', -1, 64)
	}
	return out
}
