// The subset of ONNX's protobuf schema (onnx/onnx.proto3, IR version 8) that theanine reads and
// writes, in .proto syntax, parsed by protobufjs at first use. Field numbers are ONNX's own;
// messages and fields theanine never uses are left out (protobufjs skips unknown fields when
// decoding, so models with more in them still load).
import protobuf from 'protobufjs';

const ONNX_PROTO = `
syntax = "proto3";
package onnx;
message AttributeProto {
  enum AttributeType { UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; GRAPH = 5;
    FLOATS = 6; INTS = 7; STRINGS = 8; TENSORS = 9; GRAPHS = 10; }
  string name = 1;
  AttributeType type = 20;
  float f = 2;
  int64 i = 3;
  bytes s = 4;
  TensorProto t = 5;
  GraphProto g = 6;
  repeated float floats = 7;
  repeated int64 ints = 8;
  repeated bytes strings = 9;
  repeated TensorProto tensors = 10;
  repeated GraphProto graphs = 11;
}
message ValueInfoProto { string name = 1; TypeProto type = 2; string doc_string = 3; }
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  string name = 3;
  string op_type = 4;
  string domain = 7;
  repeated AttributeProto attribute = 5;
  string doc_string = 6;
}
message ModelProto {
  int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  string producer_name = 2;
  string producer_version = 3;
  string domain = 4;
  int64 model_version = 5;
  string doc_string = 6;
  GraphProto graph = 7;
}
message GraphProto {
  repeated NodeProto node = 1;
  string name = 2;
  repeated TensorProto initializer = 5;
  string doc_string = 10;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
  repeated ValueInfoProto value_info = 13;
}
message TensorProto {
  repeated int64 dims = 1;
  int32 data_type = 2;
  repeated float float_data = 4 [packed = true];
  repeated int32 int32_data = 5 [packed = true];
  repeated int64 int64_data = 7 [packed = true];
  string name = 8;
  bytes raw_data = 9;
  repeated double double_data = 10 [packed = true];
}
message TensorShapeProto {
  message Dimension {
    oneof value { int64 dim_value = 1; string dim_param = 2; }
  }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor { int32 elem_type = 1; TensorShapeProto shape = 2; }
  oneof value { Tensor tensor_type = 1; }
}
message OperatorSetIdProto { string domain = 1; int64 version = 2; }
`;

// Plain-object forms of the messages (what protobufjs' fromObject/toObject exchange).
export interface AttributeJson {
  name: string;
  type: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorJson;
  g?: GraphJson;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
}
export interface NodeJson {
  input: string[];
  output: string[];
  name?: string;
  opType: string;
  domain?: string;
  attribute?: AttributeJson[];
}
export interface TensorJson {
  dims: number[];
  dataType: number;
  name?: string;
  rawData?: Uint8Array;
  floatData?: number[];
  int32Data?: number[];
  int64Data?: number[];
  doubleData?: number[];
}
export interface DimJson {
  dimValue?: number;
  dimParam?: string;
}
export interface ValueInfoJson {
  name: string;
  type?: { tensorType?: { elemType: number; shape?: { dim?: DimJson[] } } };
}
export interface GraphJson {
  node: NodeJson[];
  name: string;
  initializer: TensorJson[];
  input: ValueInfoJson[];
  output: ValueInfoJson[];
  valueInfo?: ValueInfoJson[];
  docString?: string;
}
export interface ModelJson {
  irVersion: number;
  opsetImport: { domain: string; version: number }[];
  producerName: string;
  producerVersion: string;
  docString?: string;
  graph: GraphJson;
}

/** AttributeProto.AttributeType values. */
export const ATTR = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7, STRINGS: 8 } as const;

let modelType: protobuf.Type | undefined;
function model(): protobuf.Type {
  return (modelType ??= protobuf.parse(ONNX_PROTO, { keepCase: false }).root.lookupType('onnx.ModelProto'));
}

export function encodeModel(m: ModelJson): Uint8Array {
  const t = model();
  return t.encode(t.fromObject(m)).finish();
}

export function decodeModel(bytes: Uint8Array): ModelJson {
  const t = model();
  // int64 fields as numbers (exact to 2^53: dims, attribute ints, int64 data), bytes as Uint8Array
  return t.toObject(t.decode(bytes), {
    longs: Number,
    bytes: Uint8Array,
    defaults: true,
    arrays: true,
  }) as unknown as ModelJson;
}
