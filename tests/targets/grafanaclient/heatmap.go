package main

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

// The Profiles Drilldown app's heatmap (its SceneExploreServiceHeatmap) asks SelectHeatmap for the spans
// of a service: query and exemplar type SPAN, no group_by, no limit, and a step of the range in seconds
// over 64, at least 1. The call is made only when -calls names it; -heatmap-type individual asks for
// whole profiles instead, and a number sends that enum value as it is (to see how a server refuses it).
var heatmapQueryTypes = map[string]querierv1.HeatmapQueryType{
	"":           querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_SPAN,
	"span":       querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_SPAN,
	"individual": querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_INDIVIDUAL,
}

var heatmapExemplarTypes = map[string]typesv1.ExemplarType{
	"none":       typesv1.ExemplarType_EXEMPLAR_TYPE_NONE,
	"span":       typesv1.ExemplarType_EXEMPLAR_TYPE_SPAN,
	"individual": typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL,
}

// heatmapRequest is Drilldown's request; -heatmap-exemplar-type "" asks for the exemplars of what the
// heatmap counts, as Grafana's datasource does when exemplars are on.
func heatmapRequest(o options) (*querierv1.SelectHeatmapRequest, error) {
	queryType, ok := heatmapQueryTypes[o.heatmapType]
	if !ok {
		n, err := strconv.Atoi(o.heatmapType)
		if err != nil {
			return nil, fmt.Errorf("unknown -heatmap-type %q", o.heatmapType)
		}
		queryType = querierv1.HeatmapQueryType(n)
	}
	exemplarType := typesv1.ExemplarType_EXEMPLAR_TYPE_SPAN
	if queryType == querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_INDIVIDUAL {
		exemplarType = typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL
	}
	if o.heatmapExemplarType != "" {
		if exemplarType, ok = heatmapExemplarTypes[o.heatmapExemplarType]; !ok {
			n, err := strconv.Atoi(o.heatmapExemplarType)
			if err != nil {
				return nil, fmt.Errorf("unknown -heatmap-exemplar-type %q", o.heatmapExemplarType)
			}
			exemplarType = typesv1.ExemplarType(n)
		}
	}
	step := o.heatmapStep
	if step == 0 {
		step = math.Max(1, math.Ceil(float64(o.until-o.from)/1000/64))
	}
	req := &querierv1.SelectHeatmapRequest{ProfileTypeID: o.profileType, LabelSelector: o.selector,
		Start: o.from, End: o.until, Step: step, GroupBy: o.groupBy, QueryType: queryType,
		ExemplarType: exemplarType}
	if o.limit != 0 { // a negative limit is sent too, to see it refused
		req.Limit = &o.limit
	}
	return req, nil
}

func selectHeatmap(ctx context.Context, c querierv1connect.QuerierServiceClient, o options) (any, error) {
	req, err := heatmapRequest(o)
	if err != nil {
		return nil, err
	}
	res, err := c.SelectHeatmap(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, s := range res.Msg.Series {
		slots := []map[string]any{}
		for _, slot := range s.Slots {
			exemplars := []map[string]any{}
			for _, e := range slot.Exemplars {
				exemplars = append(exemplars, map[string]any{"timestamp": e.Timestamp, "profile_id": e.ProfileId,
					"span_id": e.SpanId, "trace_id": e.TraceId, "value": e.Value, "labels": labelMap(e.Labels)})
			}
			slots = append(slots, map[string]any{"timestamp": slot.Timestamp, "y_min": slot.YMin,
				"counts": slot.Counts, "exemplars": exemplars})
		}
		out = append(out, map[string]any{"labels": labelMap(s.Labels), "slots": slots})
	}
	return out, nil
}
