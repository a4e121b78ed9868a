package conn

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire"
)

// unsupportedVersion builds the answer to a request whose version this
// broker does not serve. ApiVersions answers in v0 with UNSUPPORTED_VERSION
// and the API table (so the client can retry with a version it knows);
// other requests get UNSUPPORTED_VERSION in every error slot when their body
// can be decoded, else nil (the connection is closed, as Kafka does).
func unsupportedVersion(s *Server, hdr wire.RequestHeader, body []byte) (kmsg.Response, int16) {
	if hdr.Key == kmsg.ApiVersions.Int16() {
		resp := apiVersionsResponse(s)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, 0
	}
	req, err := wire.DecodeBody(hdr, body)
	if err != nil {
		return nil, 0
	}
	return errorResponse(&Request{Header: hdr, Body: req}, kerr.UnsupportedVersion.Code), -1
}

// errorResponse answers a request with code in every per-item error slot.
func errorResponse(r *Request, code int16) kmsg.Response {
	switch req := r.Body.(type) {
	case *kmsg.ProduceRequest:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.FetchRequest:
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.ListOffsetsRequest:
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.OffsetForLeaderEpochRequest:
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, n := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(n), code
			resp.Topics = append(resp.Topics, rt)
		}
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DeleteRecordsRequest:
		resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, code, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DescribeConfigsRequest:
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range req.Resources {
			rs := kmsg.NewDescribeConfigsResponseResource()
			rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, rs)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, rr := range req.Resources {
			rs := kmsg.NewAlterConfigsResponseResource()
			rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, rs)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range req.Resources {
			rs := kmsg.NewIncrementalAlterConfigsResponseResource()
			rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, rs)
		}
		return resp
	}
	// Everything else carries a top-level ErrorCode (InitProducerID,
	// DescribeCluster, FindCoordinator v0-3, the group APIs...).
	resp := r.Body.ResponseKind()
	setTopLevelError(resp, code)
	return resp
}

// setTopLevelError sets a response struct's ErrorCode field if it has one.
func setTopLevelError(resp kmsg.Response, code int16) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName("ErrorCode"); f.IsValid() && f.CanSet() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
}
