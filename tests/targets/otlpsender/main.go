// Command otlpsender sends one OTLP profiles export, built with the official generated Go types, to an
// OTLP receiver over gRPC or HTTP (protobuf or JSON), the way an OpenTelemetry Collector's exporter does,
// and prints what the receiver answered as one JSON line.
//
// Every transport sends the same shape of CPU profile with its own names, so a reader can tell which
// export a stored profile came from: service.name "otlp-<transport>" and the functions
// "<transport>_work" and "<transport>_idle" (transport with "-" as "_"), called from "main".
//
// The profiles modules are v0.3.0 (with go.opentelemetry.io/proto/otlp v1.10.0): their messages have the
// field numbers of the opentelemetry-proto Python package the ingester reads (1.45.2): the dictionary
// with stack_table and attribute_table, Profile.sample_type singular, Sample{stack_index=1,
// attribute_indices=2, link_index=3, values=4, timestamps_unix_nano=5}. v0.2.0 numbers Sample differently.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // registers the gzip compressor
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Answer is what the receiver said: Code is the gRPC code (gRPC) or the HTTP status (HTTP).
type Answer struct {
	Transport      string `json:"transport"`
	Code           int    `json:"code"`
	Message        string `json:"message"`
	Rejected       int64  `json:"rejected"`
	PartialMessage string `json:"partial_message"`
	// StatusBody is false when an HTTP error's body was not a google.rpc.Status; Message is then the body,
	// as the Collector's exporter falls back to the HTTP status and the text it got.
	StatusBody bool `json:"status_body"`
}

// headerFlags are the exporter's `headers` setting: sent with every export, as gRPC metadata or HTTP headers.
type headerFlags map[string]string

func (h headerFlags) String() string { return fmt.Sprint(map[string]string(h)) }

func (h headerFlags) Set(text string) error {
	name, value, ok := strings.Cut(text, "=")
	if !ok || name == "" {
		return fmt.Errorf("expected NAME=VALUE, got %q", text)
	}
	h[strings.ToLower(name)] = value
	return nil
}

func main() {
	transport := flag.String("transport", "grpc", "grpc, http-protobuf or http-json")
	target := flag.String("target", "", "gRPC address (host:port) or HTTP base URL (http://host:port)")
	tenant := flag.String("tenant", "", "X-Scope-OrgID to send; none when empty")
	timeNs := flag.Uint64("time", uint64(time.Now().UnixNano()), "the profile's time, Unix nanoseconds")
	badIndex := flag.Bool("bad-index", false, "send a sample whose stack index points outside the dictionary")
	headers := headerFlags{}
	flag.Var(headers, "header", "NAME=VALUE sent with the export, e.g. authorization=Bearer ...; repeat for more")
	flag.Parse()
	if *tenant != "" {
		headers["x-scope-orgid"] = *tenant
	}

	request := buildRequest(strings.ReplaceAll(*transport, "-", "_"), "otlp-"+*transport, *timeNs, *badIndex)
	var answer Answer
	var err error
	switch *transport {
	case "grpc":
		answer, err = sendGRPC(*target, headers, request)
	case "http-protobuf", "http-json":
		answer, err = sendHTTP(*target, headers, *transport == "http-json", request)
	default:
		err = fmt.Errorf("unknown transport %q", *transport)
	}
	if err != nil {
		log.Fatal(err)
	}
	answer.Transport = *transport
	if err := json.NewEncoder(os.Stdout).Encode(answer); err != nil {
		log.Fatal(err)
	}
}

// strings interns the dictionary's string table; index 0 is "" as OTLP requires.
type stringTable struct {
	index map[string]int32
	table []string
}

func (s *stringTable) of(text string) int32 {
	if i, ok := s.index[text]; ok {
		return i
	}
	s.index[text] = int32(len(s.table))
	s.table = append(s.table, text)
	return s.index[text]
}

func text(value string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: value}}
}

func buildRequest(prefix, service string, timeNs uint64, badIndex bool) *collectorpb.ExportProfilesServiceRequest {
	s := &stringTable{index: map[string]int32{"": 0}, table: []string{""}}
	functions := []*profilespb.Function{{}} // entry 0 of every table is its zero value
	locations := []*profilespb.Location{{}}
	for _, name := range []string{"main", prefix + "_work", prefix + "_idle"} {
		functions = append(functions, &profilespb.Function{NameStrindex: s.of(name), SystemNameStrindex: s.of(name),
			FilenameStrindex: s.of("/src/otlpsender/main.go"), StartLine: 10})
		locations = append(locations, &profilespb.Location{MappingIndex: 1, Address: uint64(0x401000 + 0x100*len(locations)),
			Lines: []*profilespb.Line{{FunctionIndex: int32(len(functions) - 1), Line: int64(20 * len(locations))}}})
	}
	dictionary := &profilespb.ProfilesDictionary{
		MappingTable: []*profilespb.Mapping{{}, {MemoryStart: 0x400000, MemoryLimit: 0x800000,
			FilenameStrindex: s.of("/usr/bin/otlpsender")}},
		FunctionTable: functions,
		LocationTable: locations,
		StackTable:    []*profilespb.Stack{{}, {LocationIndices: []int32{2, 1}}, {LocationIndices: []int32{3, 1}}},
		AttributeTable: []*profilespb.KeyValueAndUnit{{},
			{KeyStrindex: s.of("thread.name"), Value: text("worker-1")},
			{KeyStrindex: s.of("thread.name"), Value: &commonpb.AnyValue{
				Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: s.of("worker-2")}}}},
		LinkTable: []*profilespb.Link{{}, {TraceId: []byte("0123456789abcdef"), SpanId: []byte{0xa1, 0xb2, 0xc3, 0xd4, 1, 2, 3, 4}}},
	}
	workStack := int32(1)
	if badIndex {
		workStack = 99
	}
	profile := &profilespb.Profile{
		SampleType:   &profilespb.ValueType{TypeStrindex: s.of("samples"), UnitStrindex: s.of("count")},
		PeriodType:   &profilespb.ValueType{TypeStrindex: s.of("cpu"), UnitStrindex: s.of("nanoseconds")},
		Period:       10_000_000,
		TimeUnixNano: timeNs,
		DurationNano: uint64(10 * time.Second),
		Samples: []*profilespb.Sample{
			{StackIndex: workStack, Values: []int64{30}, AttributeIndices: []int32{1}, LinkIndex: 1},
			{StackIndex: 2, TimestampsUnixNano: []uint64{timeNs, timeNs + 1_000_000}, AttributeIndices: []int32{2}},
			{StackIndex: 1, Values: []int64{5, 5}, TimestampsUnixNano: []uint64{timeNs, timeNs + 2_000_000},
				AttributeIndices: []int32{2}},
		},
	}
	dictionary.StringTable = s.table
	return &collectorpb.ExportProfilesServiceRequest{
		Dictionary: dictionary,
		ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
				{Key: "service.name", Value: text(service)},
				{Key: "host.name", Value: text("sender-host")},
				{Key: "deployment.environment", Value: text("e2e")},
			}},
			ScopeProfiles: []*profilespb.ScopeProfiles{{
				Scope:    &commonpb.InstrumentationScope{Name: "otlpsender", Attributes: []*commonpb.KeyValue{{Key: "profiler.kind", Value: text("synthetic")}}},
				Profiles: []*profilespb.Profile{profile},
			}},
		}},
	}
}

func sendGRPC(address string, headers headerFlags, request *collectorpb.ExportProfilesServiceRequest) (Answer, error) {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Answer{}, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, value := range headers {
		ctx = metadata.AppendToOutgoingContext(ctx, name, value)
	}
	response, err := collectorpb.NewProfilesServiceClient(conn).Export(ctx, request, grpc.UseCompressor("gzip"))
	if err != nil {
		st := status.Convert(err)
		return Answer{Code: int(st.Code()), Message: st.Message()}, nil
	}
	return Answer{Rejected: response.GetPartialSuccess().GetRejectedProfiles(),
		PartialMessage: response.GetPartialSuccess().GetErrorMessage()}, nil
}

func sendHTTP(base string, headers headerFlags, asJSON bool, request *collectorpb.ExportProfilesServiceRequest) (Answer, error) {
	contentType, body, err := "application/x-protobuf", []byte(nil), error(nil)
	if asJSON {
		contentType = "application/json"
		body, err = protojson.Marshal(request)
	} else {
		body, err = proto.Marshal(request)
	}
	if err != nil {
		return Answer{}, err
	}
	var zipped bytes.Buffer
	writer := gzip.NewWriter(&zipped)
	writer.Write(body)
	writer.Close()
	httpRequest, err := http.NewRequest(http.MethodPost, base+"/v1development/profiles", &zipped)
	if err != nil {
		return Answer{}, err
	}
	httpRequest.Header.Set("Content-Type", contentType)
	httpRequest.Header.Set("Content-Encoding", "gzip")
	for name, value := range headers {
		httpRequest.Header.Set(name, value)
	}
	response, err := (&http.Client{Timeout: 30 * time.Second}).Do(httpRequest)
	if err != nil {
		return Answer{}, err
	}
	defer response.Body.Close()
	answerBody, err := io.ReadAll(response.Body)
	if err != nil {
		return Answer{}, err
	}
	unmarshal := proto.Unmarshal
	if asJSON {
		unmarshal = protojson.Unmarshal
	}
	if response.StatusCode != http.StatusOK {
		var st statuspb.Status // OTLP/HTTP answers an error with a google.rpc.Status
		if err := unmarshal(answerBody, &st); err != nil {
			return Answer{Code: response.StatusCode, Message: string(answerBody)}, nil
		}
		return Answer{Code: response.StatusCode, Message: st.GetMessage(), StatusBody: true}, nil
	}
	var exported collectorpb.ExportProfilesServiceResponse
	if err := unmarshal(answerBody, &exported); err != nil {
		return Answer{}, fmt.Errorf("HTTP 200 with a body that is not an ExportProfilesServiceResponse: %v: %q", err, answerBody)
	}
	return Answer{Code: response.StatusCode, Rejected: exported.GetPartialSuccess().GetRejectedProfiles(),
		PartialMessage: exported.GetPartialSuccess().GetErrorMessage()}, nil
}
