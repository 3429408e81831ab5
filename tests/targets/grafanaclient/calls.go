package main

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

type call struct {
	method string
	run    func(context.Context, querierv1connect.QuerierServiceClient, options) (any, error)
}

// grafanaOrder lists the calls as Grafana makes them: the query editor's pickers, then a "both" query
// (series and flamegraph), then the profiles app's extra calls, then the Drilldown app's heatmap.
var grafanaOrder = []call{
	{"ProfileTypes", profileTypes},
	{"LabelNames", labelNames},
	{"LabelValues", labelValues},
	{"SelectSeries", selectSeries},
	{"SelectMergeStacktraces", selectMergeStacktraces},
	{"SelectMergeStacktracesTree", selectMergeStacktracesTree},
	{"SelectMergeSpanProfile", selectMergeSpanProfile},
	{"Series", series},
	{"SelectMergeProfile", selectMergeProfile},
	{"Diff", diff},
	{"GetProfileStats", getProfileStats},
	{"SelectHeatmap", selectHeatmap},
}

func newClient(httpClient *http.Client, o options) querierv1connect.QuerierServiceClient {
	var opts []connect.ClientOption
	if o.useJSON {
		opts = append(opts, connect.WithProtoJSON())
	}
	if o.sendGzip {
		opts = append(opts, connect.WithSendGzip())
	}
	return querierv1connect.NewQuerierServiceClient(httpClient, o.url, opts...)
}

func plannedCalls(o options) []call {
	var planned []call
	for _, c := range grafanaOrder {
		switch {
		case len(o.calls) > 0:
			if !slices.Contains(o.calls, c.method) {
				continue
			}
		case c.method == "SelectMergeSpanProfile" && len(o.spanIDs) == 0:
			continue
		case c.method == "SelectMergeStacktracesTree" && !o.tree:
			continue
		case c.method == "SelectHeatmap": // Drilldown's, not the datasource's: only when -calls names it
			continue
		}
		planned = append(planned, c)
	}
	return planned
}

func toResult(method string, answer any, err error) result {
	if err == nil {
		return result{Method: method, Result: answer}
	}
	out := &errorResponse{Code: connect.CodeOf(err).String(), Message: err.Error()}
	var connectErr *connect.Error
	if errors.As(err, &connectErr) {
		out.Message = connectErr.Message()
	}
	return result{Method: method, Error: out}
}

func profileTypes(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: o.from, End: o.until}))
	if err != nil {
		return nil, err
	}
	types := []map[string]string{}
	for _, t := range res.Msg.ProfileTypes {
		types = append(types, map[string]string{"id": t.ID, "name": t.Name, "sample_type": t.SampleType,
			"sample_unit": t.SampleUnit, "period_type": t.PeriodType, "period_unit": t.PeriodUnit})
	}
	return types, nil
}

func labelNames(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{
		Matchers: []string{o.selector}, Start: o.from, End: o.until}))
	if err != nil {
		return nil, err
	}
	return nonNil(res.Msg.Names), nil
}

func labelValues(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{
		Name: o.label, Matchers: []string{o.selector}, Start: o.from, End: o.until}))
	if err != nil {
		return nil, err
	}
	return nonNil(res.Msg.Names), nil
}

func series(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.Series(ctx, connect.NewRequest(&querierv1.SeriesRequest{
		Matchers: []string{o.selector}, Start: o.from, End: o.until}))
	if err != nil {
		return nil, err
	}
	sets := []map[string]string{}
	for _, labels := range res.Msg.LabelsSet {
		sets = append(sets, labelMap(labels.Labels))
	}
	return sets, nil
}

func getProfileStats(ctx context.Context, c querierv1connect.QuerierServiceClient, _ options) (any, error) {
	res, err := c.GetProfileStats(ctx, connect.NewRequest(&typesv1.GetProfileStatsRequest{}))
	if err != nil {
		return nil, err
	}
	return map[string]any{"data_ingested": res.Msg.DataIngested, "oldest_profile_time": res.Msg.OldestProfileTime,
		"newest_profile_time": res.Msg.NewestProfileTime}, nil
}

func nonNil(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

func labelMap(pairs []*typesv1.LabelPair) map[string]string {
	out := map[string]string{}
	for _, p := range pairs {
		out[p.Name] = p.Value
	}
	return out
}
