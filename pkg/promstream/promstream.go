// Package promstream reads Prometheus range-query answers into a model.Matrix as the HTTP body
// arrives. client_golang's API reads a whole answer into memory, copies its data part again and
// allocates a string for every timestamp and value before it builds the matrix: on a fleet of
// 50 instances that made one diagnosis peak at about 350 MB for matrices of a tenth of that.
// API is client_golang's v1.API with only QueryRange replaced; every other call, and a range
// query given options this package cannot read, still goes through client_golang, and the
// errors are client_golang's *v1.Error values for the same answers.
package promstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// maxPoints is Prometheus's limit on the points of one series in a range answer.
const maxPoints = 11000

// maxErrorBody bounds what is read of an error answer: it is only quoted in the error.
const maxErrorBody = 1 << 20

// API is a Prometheus API whose range queries decode as they read.
type API struct {
	v1.API
	client promapi.Client
	http   *http.Client
}

// New wraps api, built on client, sending its range queries with hc (the client's own HTTP
// client, so that authentication, timeouts and retries are the same).
func New(api v1.API, client promapi.Client, hc *http.Client) *API {
	return &API{API: api, client: client, http: hc}
}

// QueryRange runs a range query as v1.API does: a form POST, then a GET where the server
// refuses POST (403, 405, 501).
func (a *API) QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	if len(opts) > 0 {
		return a.API.QueryRange(ctx, query, r, opts...)
	}
	u := a.client.URL("/api/v1/query_range", nil)
	args := url.Values{}
	args.Set("query", query)
	args.Set("start", formatTime(r.Start))
	args.Set("end", formatTime(r.End))
	args.Set("step", strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64))
	encoded := args.Encode()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(encoded))
	if err != nil {
		return nil, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// As client_golang: the transport may retry the POST, which only reads.
	req.Header["Idempotency-Key"] = nil
	// Each series has at most one point a step: its samples are allocated once, not by doubling.
	points := min(int(r.End.Sub(r.Start)/max(r.Step, time.Millisecond))+1, maxPoints)
	val, warnings, infos, code, err := a.do(ctx, req, points)
	if code == http.StatusForbidden || code == http.StatusMethodNotAllowed || code == http.StatusNotImplemented {
		u.RawQuery = encoded
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, warnings, infos, err
		}
		val, warnings, infos, _, err = a.do(ctx, req, points)
	}
	return val, warnings, infos, err
}

// do sends req and decodes its answer, whose series have at most points samples; code is the
// HTTP status, 0 when none came.
func (a *API) do(ctx context.Context, req *http.Request, points int) (model.Value, v1.Warnings, v1.Infos, int, error) {
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	defer resp.Body.Close()
	body := &readErr{r: resp.Body}
	if resp.StatusCode/100 != 2 {
		w, i, err := decodeError(resp, io.LimitReader(body, maxErrorBody))
		return nil, w, i, resp.StatusCode, err
	}
	ans, err := decode(body, points)
	if err == nil && ans.status == "error" {
		err = &v1.Error{Type: v1.ErrorType(ans.errorType), Msg: ans.errorMsg}
	}
	if body.err != nil {
		// The body stopped, not the JSON: report why, as client_golang does.
		if ctx.Err() != nil {
			return nil, nil, nil, resp.StatusCode, ctx.Err()
		}
		return nil, nil, nil, resp.StatusCode, body.err
	}
	if err != nil {
		return nil, ans.warnings, ans.infos, resp.StatusCode, err
	}
	return ans.value, ans.warnings, ans.infos, resp.StatusCode, nil
}

// decodeError is client_golang's reading of an answer with an error status: Prometheus's own
// error answer (400, 422) for its type and message, any other status by its class.
func decodeError(resp *http.Response, body io.Reader) (v1.Warnings, v1.Infos, error) {
	raw, _ := io.ReadAll(body)
	code := resp.StatusCode
	if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		t, msg := errorTypeAndMsg(code)
		return nil, nil, &v1.Error{Type: t, Msg: msg, Detail: string(raw)}
	}
	var env struct {
		Status    string       `json:"status"`
		ErrorType v1.ErrorType `json:"errorType"`
		Error     string       `json:"error"`
		Warnings  []string     `json:"warnings"`
		Infos     []string     `json:"infos"`
	}
	if err := jsoniter.Unmarshal(raw, &env); err != nil {
		t, msg := errorTypeAndMsg(code)
		return nil, nil, &v1.Error{Type: t, Msg: msg, Detail: string(raw)}
	}
	if env.Status == "success" {
		return env.Warnings, env.Infos, &v1.Error{Type: v1.ErrBadResponse, Msg: "inconsistent body for response code"}
	}
	if env.ErrorType == "" {
		env.ErrorType = v1.ErrClient
	}
	if env.Error == "" {
		env.Error = fmt.Sprintf("client error: %d", code)
	}
	return env.Warnings, env.Infos, &v1.Error{Type: env.ErrorType, Msg: env.Error}
}

func errorTypeAndMsg(code int) (v1.ErrorType, string) {
	switch code / 100 {
	case 4:
		return v1.ErrClient, fmt.Sprintf("client error: %d", code)
	case 5:
		return v1.ErrServer, fmt.Sprintf("server error: %d", code)
	}
	return v1.ErrBadResponse, fmt.Sprintf("bad response code %d", code)
}

// answer is the envelope of a successful status code.
type answer struct {
	status, errorType, errorMsg string
	warnings                    v1.Warnings
	infos                       v1.Infos
	value                       model.Value
}

// decode reads an answer's envelope and its matrix in one pass over r, whatever the order of
// the fields.
func decode(r io.Reader, points int) (answer, error) {
	var ans answer
	it := jsoniter.Parse(jsoniter.ConfigDefault, r, 32<<10)
	var (
		resultType string
		matrix     model.Matrix
		sawData    bool
	)
	it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
		switch field {
		case "status":
			ans.status = it.ReadString()
		case "errorType":
			ans.errorType = it.ReadString()
		case "error":
			ans.errorMsg = it.ReadString()
		case "warnings":
			ans.warnings = readStrings(it)
		case "infos":
			ans.infos = readStrings(it)
		case "data":
			sawData = true
			resultType, matrix = readData(it, points)
		default:
			it.Skip()
		}
		return it.Error == nil
	})
	if it.Error != nil {
		return ans, &v1.Error{Type: v1.ErrBadResponse, Msg: it.Error.Error()}
	}
	if ans.status == "error" {
		return ans, nil
	}
	if !sawData {
		return ans, &v1.Error{Type: v1.ErrBadResponse, Msg: "the answer has no data"}
	}
	switch resultType {
	case "matrix":
		if matrix == nil {
			matrix = model.Matrix{}
		}
		ans.value = matrix
	case "vector":
		ans.value = model.Vector{}
	case "scalar":
		ans.value = &model.Scalar{}
	case "string":
		ans.value = &model.String{}
	default:
		return ans, &v1.Error{Type: v1.ErrBadResponse, Msg: fmt.Sprintf("unexpected result type %q", resultType)}
	}
	return ans, nil
}

func readStrings(it *jsoniter.Iterator) []string {
	var out []string
	for it.ReadArray() {
		out = append(out, it.ReadString())
	}
	return out
}

// readData reads {"resultType": ..., "result": [...]}: the result as a matrix, whose streams
// carry "metric" and "values" (native histograms and any other field are skipped).
func readData(it *jsoniter.Iterator, points int) (string, model.Matrix) {
	var (
		resultType string
		matrix     model.Matrix
	)
	for field := it.ReadObject(); field != ""; field = it.ReadObject() {
		switch field {
		case "resultType":
			resultType = it.ReadString()
		case "result":
			if it.WhatIsNext() != jsoniter.ArrayValue {
				it.Skip()
				continue
			}
			for it.ReadArray() {
				matrix = append(matrix, readStream(it, points))
			}
		default:
			it.Skip()
		}
	}
	return resultType, matrix
}

func readStream(it *jsoniter.Iterator, points int) *model.SampleStream {
	ss := &model.SampleStream{Metric: model.Metric{}}
	for field := it.ReadObject(); field != ""; field = it.ReadObject() {
		switch field {
		case "metric":
			for name := it.ReadObject(); name != ""; name = it.ReadObject() {
				ss.Metric[model.LabelName(name)] = model.LabelValue(it.ReadString())
			}
		case "values":
			ss.Values = make([]model.SamplePair, 0, points)
			for it.ReadArray() {
				p, err := readPair(it)
				if err != nil {
					it.ReportError("reading a sample", err.Error())
					return ss
				}
				ss.Values = append(ss.Values, p)
			}
		default:
			it.Skip()
		}
	}
	return ss
}

// readPair reads [timestamp, "value"]: seconds as a JSON number, the value as a string.
func readPair(it *jsoniter.Iterator) (model.SamplePair, error) {
	var p model.SamplePair
	if !it.ReadArray() {
		return p, errors.New("a sample must be [timestamp, value]")
	}
	p.Timestamp = model.Time(math.Round(it.ReadFloat64() * 1000))
	if !it.ReadArray() {
		return p, errors.New("a sample has no value")
	}
	raw := it.ReadStringAsSlice()
	if len(raw) == 0 {
		return p, errors.New("a sample's value is empty")
	}
	// The bytes are the iterator's buffer and ParseFloat keeps nothing of its argument (an
	// error copies it), so no string is allocated for each of the millions of values.
	v, err := strconv.ParseFloat(unsafe.String(&raw[0], len(raw)), 64)
	if err != nil {
		return p, err
	}
	p.Value = model.SampleValue(v)
	if it.ReadArray() {
		return p, errors.New("a sample has more than [timestamp, value]")
	}
	return p, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}

// readErr remembers the first error of the body other than its end, which the JSON iterator
// would otherwise report as a syntax error.
type readErr struct {
	r   io.Reader
	err error
}

func (b *readErr) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}
