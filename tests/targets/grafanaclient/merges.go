package main

import (
	"context"
	"encoding/base64"
	"fmt"

	"connectrpc.com/connect"
	googlev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"
)

var aggregations = map[string]typesv1.TimeSeriesAggregationType{
	"sum": typesv1.TimeSeriesAggregationType_TIME_SERIES_AGGREGATION_TYPE_SUM,
	"avg": typesv1.TimeSeriesAggregationType_TIME_SERIES_AGGREGATION_TYPE_AVERAGE,
}

func selectSeries(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	req := &querierv1.SelectSeriesRequest{ProfileTypeID: o.profileType, LabelSelector: o.selector,
		Start: o.from, End: o.until, Step: o.step, GroupBy: o.groupBy,
		ExemplarType: typesv1.ExemplarType_EXEMPLAR_TYPE_NONE}
	if o.exemplar {
		req.ExemplarType = typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL
	}
	if o.limit > 0 {
		req.Limit = &o.limit
	}
	if o.aggregation != "" {
		aggregation, ok := aggregations[o.aggregation]
		if !ok {
			return nil, fmt.Errorf("unknown -aggregation %q", o.aggregation)
		}
		req.Aggregation = &aggregation
	}
	res, err := c.SelectSeries(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, s := range res.Msg.Series {
		points := [][2]float64{}
		exemplars := []map[string]any{}
		for _, p := range s.Points {
			points = append(points, [2]float64{float64(p.Timestamp), p.Value})
			for _, e := range p.Exemplars {
				exemplars = append(exemplars, map[string]any{"point": p.Timestamp, "timestamp": e.Timestamp,
					"profile_id": e.ProfileId, "value": e.Value, "labels": labelMap(e.Labels)})
			}
		}
		out = append(out, map[string]any{"labels": labelMap(s.Labels), "points": points, "exemplars": exemplars})
	}
	return out, nil
}

func mergeRequest(o options, from, until int64) *querierv1.SelectMergeStacktracesRequest {
	return &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: o.profileType, LabelSelector: o.selector,
		Start: from, End: until, MaxNodes: &o.maxNodes, ProfileIdSelector: o.profileIDs}
}

func selectMergeStacktraces(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(mergeRequest(o, o.from, o.until)))
	if err != nil {
		return nil, err
	}
	return flamegraph(res.Msg.Flamegraph), nil
}

func selectMergeStacktracesTree(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	req := mergeRequest(o, o.from, o.until)
	req.Format = querierv1.ProfileFormat_PROFILE_FORMAT_TREE
	res, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return map[string]any{"tree": base64.StdEncoding.EncodeToString(res.Msg.Tree),
		"has_flamegraph": res.Msg.Flamegraph != nil}, nil
}

func selectMergeSpanProfile(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.SelectMergeSpanProfile(ctx, connect.NewRequest(&querierv1.SelectMergeSpanProfileRequest{
		ProfileTypeID: o.profileType, LabelSelector: o.selector, SpanSelector: o.spanIDs,
		Start: o.from, End: o.until, MaxNodes: &o.maxNodes}))
	if err != nil {
		return nil, err
	}
	return flamegraph(res.Msg.Flamegraph), nil
}

func diff(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.Diff(ctx, connect.NewRequest(&querierv1.DiffRequest{
		Left: mergeRequest(o, o.from, o.diffSplit), Right: mergeRequest(o, o.diffSplit, o.until)}))
	if err != nil {
		return nil, err
	}
	fg := res.Msg.Flamegraph
	if fg == nil {
		return nil, nil
	}
	return map[string]any{"names": nonNil(fg.Names), "levels": levels(fg.Levels), "total": fg.Total,
		"max_self": fg.MaxSelf, "left_ticks": fg.LeftTicks, "right_ticks": fg.RightTicks}, nil
}

// flamegraph is the answer as Grafana reads it; nil (JSON null) when the server sent none, which Grafana
// takes as "no data in range".
func flamegraph(fg *querierv1.FlameGraph) any {
	if fg == nil {
		return nil
	}
	return map[string]any{"names": nonNil(fg.Names), "levels": levels(fg.Levels), "total": fg.Total,
		"max_self": fg.MaxSelf}
}

func levels(in []*querierv1.Level) [][]int64 {
	out := [][]int64{}
	for _, level := range in {
		values := level.Values
		if values == nil {
			values = []int64{}
		}
		out = append(out, values)
	}
	return out
}

func selectMergeProfile(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	res, err := c.SelectMergeProfile(ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{
		ProfileTypeID: o.profileType, LabelSelector: o.selector, Start: o.from, End: o.until,
		MaxNodes: &o.maxNodes}))
	if err != nil {
		return nil, err
	}
	return profileSummary(res.Msg)
}

// profileSummary reads the pprof answer as `go tool pprof` would: per sample type its unit and total, and
// per function (of each sample's leaf frame) its self value in the first sample type.
func profileSummary(p *googlev1.Profile) (any, error) {
	body, err := proto.Marshal(p)
	if err != nil {
		return nil, err
	}
	text := func(i int64) string {
		if i < 0 || int(i) >= len(p.StringTable) {
			return fmt.Sprintf("<bad string index %d>", i)
		}
		return p.StringTable[i]
	}
	types, totals := []string{}, make([]int64, len(p.SampleType))
	for _, t := range p.SampleType {
		types = append(types, text(t.Type)+":"+text(t.Unit))
	}
	self := map[string]int64{}
	leafNames := leafFunctionNames(p, text)
	for _, s := range p.Sample {
		for i := range totals {
			if i < len(s.Value) {
				totals[i] += s.Value[i]
			}
		}
		if len(s.LocationId) > 0 && len(s.Value) > 0 {
			self[leafNames[s.LocationId[0]]] += s.Value[0]
		}
	}
	period := ""
	if p.PeriodType != nil {
		period = text(p.PeriodType.Type) + ":" + text(p.PeriodType.Unit)
	}
	return map[string]any{"sample_types": types, "totals": totals, "samples": len(p.Sample),
		"period_type": period, "period": p.Period, "time_nanos": p.TimeNanos, "duration_nanos": p.DurationNanos,
		"self_by_function": self, "pprof": base64.StdEncoding.EncodeToString(body)}, nil
}

// leafFunctionNames maps a location id to the function of its innermost line (line[0] in pprof).
func leafFunctionNames(p *googlev1.Profile, text func(int64) string) map[uint64]string {
	functions := map[uint64]string{}
	for _, f := range p.Function {
		functions[f.Id] = text(f.Name)
	}
	names := map[uint64]string{}
	for _, loc := range p.Location {
		if len(loc.Line) > 0 {
			names[loc.Id] = functions[loc.Line[0].FunctionId]
		} else {
			names[loc.Id] = fmt.Sprintf("0x%x", loc.Address)
		}
	}
	return names
}
