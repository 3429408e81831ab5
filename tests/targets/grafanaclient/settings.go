package main

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
	settingsv1 "github.com/grafana/pyroscope/api/gen/proto/go/settings/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/settings/v1/settingsv1connect"
)

// Grafana's Profiles Drilldown app reads its settings from SettingsService.Get when it starts, and writes
// one with Set when its user changes it. They are made only when -calls names them, before the
// querier's calls and in the order -calls gives.
type settingsCall struct {
	method string
	run    func(context.Context, settingsv1connect.SettingsServiceClient, options) (any, error)
}

var settingsCalls = map[string]settingsCall{
	"SettingsGet": {"SettingsGet", settingsGet},
	"SettingsSet": {"SettingsSet", settingsSet},
}

func newSettingsClient(httpClient *http.Client, o options) settingsv1connect.SettingsServiceClient {
	var opts []connect.ClientOption
	if o.useJSON {
		opts = append(opts, connect.WithProtoJSON())
	}
	return settingsv1connect.NewSettingsServiceClient(httpClient, o.url, opts...)
}

func settingsGet(ctx context.Context, c settingsv1connect.SettingsServiceClient, _ options) (any, error) {
	res, err := c.Get(ctx, connect.NewRequest(&settingsv1.GetSettingsRequest{}))
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, s := range res.Msg.Settings {
		out = append(out, settingMap(s))
	}
	return out, nil
}

func settingsSet(ctx context.Context, c settingsv1connect.SettingsServiceClient, o options) (any, error) {
	res, err := c.Set(ctx, connect.NewRequest(&settingsv1.SetSettingsRequest{Setting: &settingsv1.Setting{
		Name: o.settingName, Value: o.settingValue, ModifiedAt: o.settingModifiedAt}}))
	if err != nil {
		return nil, err
	}
	return settingMap(res.Msg.Setting), nil
}

func settingMap(s *settingsv1.Setting) map[string]any {
	return map[string]any{"name": s.Name, "value": s.Value, "modified_at": s.ModifiedAt}
}
