package testbed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// SimBackfill runs the vllm-sim command's backfill as an operator would: bin with args (the
// scenario and its window), writing dir/job.om and dir/job.truth.json. The series' job label
// simJob (what the simulator writes) becomes job, so that one Prometheus holds several runs,
// each selected by its job; the truth file is decoded into truth. It returns the OpenMetrics
// file, for Prometheus.
func SimBackfill(bin, dir, simJob, job string, truth any, args ...string) (string, error) {
	file := filepath.Join(dir, job+".om")
	truthFile := filepath.Join(dir, job+".truth.json")
	args = append([]string{"backfill"}, append(args, "--openmetrics", file, "--truth", truthFile)...)
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("vllm-sim backfill %s: %v: %s", job, err, out)
	}
	raw, err := os.ReadFile(truthFile)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(raw, truth); err != nil {
		return "", fmt.Errorf("%s: %w", truthFile, err)
	}
	om, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	relabelled := bytes.ReplaceAll(om, []byte(`job="`+simJob+`"`), []byte(`job="`+job+`"`))
	return file, os.WriteFile(file, relabelled, 0o644)
}
