package promstream

import (
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bodies to the range answer decoder: it must answer a value or an
// error, never panic, whatever Prometheus, a proxy or an attacker sends.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a","le":"0.5"},"values":[[1700000000.5,"1.5"],[1700000001,"NaN"]]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]},"warnings":["w"]}`,
		`{"status":"error","errorType":"bad_data","error":"parse error"}`,
		`{"data":{"result":[{"values":[[1,"+Inf"],[2,"-Inf"]],"histograms":[[1,{"count":"1"}]]}],"resultType":"matrix"},"status":"success"}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"1",2]]}]}}`,
		``, `null`, `[]`, `{"data":null}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		_, _ = decode(strings.NewReader(body), 8)
	})
}
