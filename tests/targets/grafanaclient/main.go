// Command grafanaclient makes the calls Grafana's "Grafana Pyroscope" datasource and its profiles app make,
// in their order and with their options, through the generated Connect clients of the published
// github.com/grafana/pyroscope/api module, and prints every answer (or error) as JSON on stdout.
//
// The calls follow Grafana's datasource: ProfileTypes, LabelNames and LabelValues with the selector as the
// one matcher, then a query: SelectSeries (step in seconds, group_by, limit, aggregation) and
// SelectMergeStacktraces (max_nodes), SelectMergeSpanProfile when span ids are given; then what the profiles
// app adds: Series, SelectMergeProfile (pprof export), Diff and GetProfileStats. The Profiles Drilldown
// app's settings calls (SettingsGet, SettingsSet) and its heatmap (SelectHeatmap) are made when -calls names
// them (settings.go, heatmap.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

type options struct {
	url, profileType, selector, label string
	from, until, diffSplit            int64
	maxNodes, limit                   int64
	step                              float64
	groupBy, spanIDs, calls           []string
	profileIDs                        []string
	aggregation, tenant, bearerToken  string
	basicAuth                         string
	settingName, settingValue         string
	settingModifiedAt                 int64
	heatmapType, heatmapExemplarType  string
	heatmapStep                       float64
	useJSON, sendGzip, tree, exemplar bool
	timeout                           time.Duration
}

func parseOptions() options {
	var o options
	var groupBy, spans, calls, profileIDs string
	flag.StringVar(&o.url, "url", "", "base URL of the querier, e.g. http://127.0.0.1:4040")
	flag.Int64Var(&o.from, "from", 0, "start, epoch milliseconds")
	flag.Int64Var(&o.until, "until", 0, "end, epoch milliseconds")
	flag.StringVar(&o.profileType, "profile-type", "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "profile type id")
	flag.StringVar(&o.selector, "selector", "{}", "label selector")
	flag.StringVar(&o.label, "label", "service_name", "label whose values LabelValues asks for")
	flag.Int64Var(&o.maxNodes, "max-nodes", 16384, "max_nodes of the merges (Grafana's default)")
	flag.Float64Var(&o.step, "step", 15, "SelectSeries step in seconds (Grafana: max(interval, 15s))")
	flag.StringVar(&groupBy, "group-by", "", "comma-separated group_by labels of SelectSeries")
	flag.Int64Var(&o.limit, "limit", 0, "SelectSeries limit (top N series); 0 leaves it unset")
	flag.StringVar(&o.aggregation, "aggregation", "", "SelectSeries aggregation: sum, avg or empty (unset)")
	flag.StringVar(&spans, "span-ids", "", "comma-separated span ids: also call SelectMergeSpanProfile")
	flag.BoolVar(&o.exemplar, "exemplars", false, "SelectSeries asks for individual-profile exemplars")
	flag.StringVar(&profileIDs, "profile-ids", "", "comma-separated profile_id_selector of SelectMergeStacktraces")
	flag.Int64Var(&o.diffSplit, "diff-split", 0, "Diff compares from..split with split..until; default the middle")
	flag.StringVar(&calls, "calls", "", "comma-separated methods to call (default: all, in Grafana's order)")
	flag.BoolVar(&o.useJSON, "json", false, "send and receive JSON bodies instead of protobuf")
	flag.BoolVar(&o.sendGzip, "gzip", false, "gzip request bodies")
	flag.BoolVar(&o.tree, "tree", false, "also ask SelectMergeStacktraces for the tree format")
	flag.StringVar(&o.tenant, "tenant", "", "X-Scope-OrgID header, as a datasource's custom HTTP header sets it")
	flag.StringVar(&o.basicAuth, "basic-auth", "", "USER:PASSWORD, as the datasource's Basic authentication sends it")
	flag.StringVar(&o.bearerToken, "bearer-token", "", "a token sent as Authorization: Bearer, as a datasource's "+
		"custom Authorization header (or Forward OAuth Identity) sends it")
	flag.StringVar(&o.settingName, "setting-name", "", "name of the setting SettingsSet writes")
	flag.StringVar(&o.settingValue, "setting-value", "", "value of the setting SettingsSet writes")
	flag.Int64Var(&o.settingModifiedAt, "setting-modified-at", 0, "modifiedAt (ms) SettingsSet sends; 0: unset")
	flag.StringVar(&o.heatmapType, "heatmap-type", "span", "SelectHeatmap query_type: span (Drilldown's), "+
		"individual, or an enum number")
	flag.StringVar(&o.heatmapExemplarType, "heatmap-exemplar-type", "", "SelectHeatmap exemplar_type: none, "+
		"span, individual or an enum number; empty: those of what -heatmap-type counts")
	flag.Float64Var(&o.heatmapStep, "heatmap-step", 0, "SelectHeatmap step in seconds; 0: Drilldown's, "+
		"the range over 64, at least 1")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "timeout of each call")
	flag.Parse()
	o.groupBy, o.spanIDs, o.calls = splitList(groupBy), splitList(spans), splitList(calls)
	o.profileIDs = splitList(profileIDs)
	if o.url == "" || o.until <= 0 {
		fmt.Fprintln(os.Stderr, "usage: grafanaclient -url URL -from MS -until MS [-profile-type T] [-selector S]")
		os.Exit(2)
	}
	if o.diffSplit == 0 {
		o.diffSplit = o.from + (o.until-o.from)/2
	}
	return o
}

func splitList(text string) []string {
	var out []string
	for _, part := range strings.Split(text, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// result is one call's answer: the method, and either its converted response or its Connect error.
type result struct {
	Method string         `json:"method"`
	Result any            `json:"result,omitempty"`
	Error  *errorResponse `json:"error,omitempty"`
}

type errorResponse struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func main() {
	o := parseOptions()
	httpClient := &http.Client{Transport: withHeaders(o)}
	client := newClient(httpClient, o)
	settings := newSettingsClient(httpClient, o)
	var results []result
	for _, name := range o.calls {
		if call, ok := settingsCalls[name]; ok {
			ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
			answer, err := call.run(ctx, settings, o)
			cancel()
			results = append(results, toResult(call.method, answer, err))
		}
	}
	for _, call := range plannedCalls(o) {
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		answer, err := call.run(ctx, client, o)
		cancel()
		results = append(results, toResult(call.method, answer, err))
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", " ")
	if err := encoder.Encode(map[string]any{"calls": results}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// headerTransport adds the datasource's credential and custom headers to every request, as Grafana's
// HTTP client does: basic auth through Go's SetBasicAuth, then the custom headers, which win.
type headerTransport struct {
	user, password string
	headers        map[string]string
	next           http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if t.user != "" {
		req.SetBasicAuth(t.user, t.password)
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.next.RoundTrip(req)
}

func withHeaders(o options) http.RoundTripper {
	headers := map[string]string{}
	if o.tenant != "" {
		headers["X-Scope-OrgID"] = o.tenant
	}
	if o.bearerToken != "" {
		headers["Authorization"] = "Bearer " + o.bearerToken
	}
	user, password, _ := strings.Cut(o.basicAuth, ":")
	return headerTransport{user: user, password: password, headers: headers, next: http.DefaultTransport}
}
