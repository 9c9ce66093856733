package traces

import "testing"

func TestHexIDsToBase64(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"span ids in hex", `{"traceId":"35cda8f3cda64ae250a46b22235d5719","spanId":"dc5663a7c960ddc1","parentSpanId" : "61d69b7d2995eddc"}`,
			`{"traceId":"Nc2o882mSuJQpGsiI11XGQ==","spanId":"3FZjp8lg3cE=","parentSpanId" : "YdabfSmV7dw="}`},
		{"base64 ids kept", `{"traceId":"pWDH+Y328OVseSuy5q9HOg==","spanId":"mR60TkG01q8="}`,
			`{"traceId":"pWDH+Y328OVseSuy5q9HOg==","spanId":"mR60TkG01q8="}`},
		{"key inside a string value kept", `{"stringValue":"{\"traceId\":\"dc5663a7c960ddc1\"}"}`,
			`{"stringValue":"{\"traceId\":\"dc5663a7c960ddc1\"}"}`},
		{"other keys kept", `{"requestId":"dc5663a7c960ddc1"}`, `{"requestId":"dc5663a7c960ddc1"}`},
		{"empty id kept", `{"parentSpanId":""}`, `{"parentSpanId":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(hexIDsToBase64([]byte(tt.in))); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
