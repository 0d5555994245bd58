// ONNX Runtime peer of the BERT-encoder benchmark: builds the encoder as an ONNX model from a
// safetensors file, runs it with onnxruntime-node (CPU) and times each sequence length.
// README.md beside this file has the protocol; `node bert_encoder.mjs --help` the options.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import ort from 'onnxruntime-node';

const ORT_VERSION = ort.env.versions?.node ?? '1.30.0'; // package.json pins 1.30.0

const USAGE = `usage: node bert_encoder.mjs --weights FILE --layers L --heads H --io DIR --lengths T1,T2,...
       [--eps 1e-12] [--threads 1] [--graph standard|fused] [--repeat 10] [--serve]
Reads DIR/input-T.bin (float32 [T, hidden]), writes DIR/ort-GRAPH-output-T.bin and prints
one JSON line for the session, then one per T. With --serve, times nothing until asked:
each line "T R" on standard input times length T (one of --lengths) R times and prints
its line; the script exits at the end of its input.`;

class UsageError extends Error {}

// ---------------------------------------------------------------- command line

function parseArgs(argv) {
  const opts = { eps: 1e-12, threads: 1, graph: 'standard', repeat: 10, serve: false };
  const known = new Set(['weights', 'layers', 'heads', 'eps', 'threads', 'graph', 'io', 'lengths', 'repeat']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    }
    if (arg === '--serve') {
      opts.serve = true;
      continue;
    }
    let key, value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      key = arg.slice(2, eq);
      value = arg.slice(eq + 1);
    } else if (arg.startsWith('--')) {
      key = arg.slice(2);
      if (i + 1 >= argv.length) throw new UsageError(`--${key} needs a value`);
      value = argv[++i];
    } else {
      throw new UsageError(`unexpected argument '${arg}'`);
    }
    if (!known.has(key)) throw new UsageError(`unknown option --${key}`);
    opts[key] = value;
  }
  for (const key of ['weights', 'layers', 'heads', 'io', 'lengths']) {
    if (opts[key] === undefined) throw new UsageError(`--${key} is required`);
  }
  const positiveInt = (key) => {
    const s = String(opts[key]);
    const v = Number(s);
    if (!/^\d+$/.test(s) || !Number.isSafeInteger(v) || v < 1) {
      throw new UsageError(`--${key} must be a positive integer, got '${s}'`);
    }
    return v;
  };
  opts.layers = positiveInt('layers');
  opts.heads = positiveInt('heads');
  opts.threads = positiveInt('threads');
  opts.repeat = positiveInt('repeat');
  opts.eps = Number(opts.eps);
  if (!Number.isFinite(opts.eps) || opts.eps <= 0) throw new UsageError('--eps must be a positive number');
  if (opts.graph !== 'standard' && opts.graph !== 'fused') {
    throw new UsageError(`--graph must be standard or fused, got '${opts.graph}'`);
  }
  opts.lengths = String(opts.lengths).split(',').map((s) => {
    const v = Number(s);
    if (!/^\d+$/.test(s) || !Number.isSafeInteger(v) || v < 1) {
      throw new UsageError(`--lengths: '${s}' is not a positive integer`);
    }
    return v;
  });
  return opts;
}

// ---------------------------------------------------------------- safetensors

// Returns a Map name -> header entry (dtype, shape, data_offsets) and the file's bytes;
// tensorF32 below checks and copies one tensor.
function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 8) throw new Error(`${file}: too short for a safetensors file`);
  const headerLen = buf.readBigUInt64LE(0);
  if (headerLen > BigInt(buf.length - 8)) throw new Error(`${file}: header length ${headerLen} past the end of the file`);
  const n = Number(headerLen);
  let header;
  try {
    header = JSON.parse(buf.toString('utf8', 8, 8 + n));
  } catch (e) {
    throw new Error(`${file}: bad safetensors header: ${e.message}`);
  }
  const dataStart = 8 + n;
  const tensors = new Map();
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    tensors.set(name, { file, info, dataStart, buf });
  }
  return tensors;
}

// The named F32 tensor, checked against the expected shape; the data is copied (aligned).
function tensorF32(tensors, name, shape) {
  const t = tensors.get(name);
  if (!t) throw new Error(`weights: missing tensor ${name}`);
  const { info, dataStart, buf, file } = t;
  if (info.dtype !== 'F32') throw new Error(`weights: ${name} has dtype ${info.dtype}, only F32 is read`);
  const got = info.shape;
  if (!Array.isArray(got) || got.length !== shape.length || got.some((d, i) => d !== shape[i])) {
    throw new Error(`weights: ${name} has shape [${got}], expected [${shape}]`);
  }
  const count = shape.reduce((a, b) => a * b, 1);
  const [begin, end] = info.data_offsets ?? [];
  if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || end - begin !== 4 * count ||
      begin < 0 || dataStart + end > buf.length) {
    throw new Error(`weights: ${name} has bad data_offsets [${info.data_offsets}] in ${file}`);
  }
  const out = new Float32Array(count);
  new Uint8Array(out.buffer).set(buf.subarray(dataStart + begin, dataStart + end));
  return out;
}

// A 2-D tensor's shape (to size the model from the weights).
function shape2d(tensors, name) {
  const t = tensors.get(name);
  if (!t) throw new Error(`weights: missing tensor ${name}`);
  const s = t.info.shape;
  if (!Array.isArray(s) || s.length !== 2 || !s.every((d) => Number.isSafeInteger(d) && d > 0)) {
    throw new Error(`weights: ${name} has shape [${s}], expected 2-D`);
  }
  return s;
}

// w [rows, cols] row-major -> [cols, rows]
function transpose(w, rows, cols) {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = w[base + c];
  }
  return out;
}

// ---------------------------------------------------------------- protobuf writer
// Just what ModelProto needs: varints, fixed32 floats and length-delimited fields. A message
// is kept as a list of chunks so that large raw_data is copied only once, into the result.

const utf8 = new TextEncoder();

class Pb {
  constructor() {
    this.parts = [];
    this.length = 0;
  }
  raw(bytes) {
    this.parts.push(bytes);
    this.length += bytes.length;
    return this;
  }
  varint(value) {
    let x = BigInt.asUintN(64, BigInt(value)); // negative int64 -> ten-byte two's complement
    const out = [];
    while (x >= 0x80n) {
      out.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    out.push(Number(x));
    return this.raw(Uint8Array.from(out));
  }
  key(field, wireType) {
    return this.varint(field * 8 + wireType);
  }
  int(field, value) { // int32, int64 and enums: wire type 0
    return this.key(field, 0).varint(value);
  }
  float(field, value) { // wire type 5, little-endian IEEE single
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    return this.key(field, 5).raw(b);
  }
  bytes(field, bytes) { // wire type 2
    return this.key(field, 2).varint(bytes.length).raw(bytes);
  }
  string(field, s) {
    return this.bytes(field, utf8.encode(s));
  }
  message(field, msg) {
    this.key(field, 2).varint(msg.length);
    for (const p of msg.parts) this.raw(p);
    return this;
  }
  finish() {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

// ---------------------------------------------------------------- ONNX messages (onnx.proto)

const FLOAT = 1; // TensorProto.DataType
const INT64 = 7;
const ATTR_FLOAT = 1; // AttributeProto.AttributeType
const ATTR_INT = 2;
const ATTR_INTS = 7;

// TensorProto: dims=1, data_type=2, name=8, raw_data=9
function tensorProto(name, dims, dataType, rawBytes) {
  const t = new Pb();
  for (const d of dims) t.int(1, d);
  t.int(2, dataType);
  t.string(8, name);
  t.bytes(9, rawBytes);
  return t;
}

// ValueInfoProto: name=1, type=2; TypeProto: tensor_type=1; TypeProto.Tensor: elem_type=1,
// shape=2; TensorShapeProto: dim=1; Dimension: dim_value=1, dim_param=2
function valueInfo(name, dims) {
  const shape = new Pb();
  for (const d of dims) {
    const dim = new Pb();
    if (typeof d === 'string') dim.string(2, d);
    else dim.int(1, d);
    shape.message(1, dim);
  }
  const tensorType = new Pb().int(1, FLOAT).message(2, shape);
  const type = new Pb().message(1, tensorType);
  return new Pb().string(1, name).message(2, type);
}

// AttributeProto: name=1, f=2, i=3, ints=8, type=20
function attribute(name, value) {
  const a = new Pb().string(1, name);
  if (Array.isArray(value)) {
    for (const v of value) a.int(8, v);
    a.int(20, ATTR_INTS);
  } else if (value.float !== undefined) {
    a.float(2, value.float);
    a.int(20, ATTR_FLOAT);
  } else {
    a.int(3, value.int);
    a.int(20, ATTR_INT);
  }
  return a;
}

// NodeProto: input=1, output=2, name=3, op_type=4, attribute=5, domain=7
function nodeProto(opType, inputs, outputs, name, attrs = {}, domain = '') {
  const n = new Pb();
  for (const i of inputs) n.string(1, i);
  for (const o of outputs) n.string(2, o);
  n.string(3, name);
  n.string(4, opType);
  for (const [k, v] of Object.entries(attrs)) n.message(5, attribute(k, v));
  if (domain) n.string(7, domain);
  return n;
}

// Collects nodes and initializers, then writes ModelProto:
// ModelProto: ir_version=1, producer_name=2, producer_version=3, graph=7, opset_import=8;
// GraphProto: node=1, name=2, initializer=5, input=11, output=12;
// OperatorSetIdProto: domain=1, version=2
class GraphBuilder {
  constructor() {
    this.nodes = [];
    this.inits = [];
    this.count = 0;
  }
  // Appends a node; returns its output's name (a fresh one unless `out` is given).
  node(opType, inputs, attrs = {}, domain = '', out = undefined) {
    const id = this.count++;
    const output = out ?? `${opType.toLowerCase()}_${id}`;
    this.nodes.push(nodeProto(opType, inputs, [output], `n${id}_${opType}`, attrs, domain));
    return output;
  }
  floats(name, dims, data) {
    this.inits.push(tensorProto(name, dims, FLOAT, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)));
    return name;
  }
  int64s(name, values) {
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.inits.push(tensorProto(name, [values.length], INT64, new Uint8Array(data.buffer)));
    return name;
  }
  model(inputs, outputs, opsets) {
    const g = new Pb();
    for (const n of this.nodes) g.message(1, n);
    g.string(2, 'bert_encoder');
    for (const t of this.inits) g.message(5, t);
    for (const [name, dims] of inputs) g.message(11, valueInfo(name, dims));
    for (const [name, dims] of outputs) g.message(12, valueInfo(name, dims));
    const m = new Pb();
    m.int(1, 8); // IR version 8 (ONNX 1.13; opset 17 and com.microsoft 1)
    m.string(2, 'dietcode-bench');
    m.string(3, '1');
    m.message(7, g);
    for (const [domain, version] of opsets) {
      const o = new Pb();
      if (domain) o.string(1, domain);
      o.int(2, version);
      m.message(8, o);
    }
    return m.finish();
  }
}

// ---------------------------------------------------------------- the two graphs

function layerWeights(tensors, l, hidden, ffn) {
  const p = `encoder.layer.${l}.`;
  const w = (name, shape) => tensorF32(tensors, p + name, shape);
  return {
    wq: w('attention.self.query.weight', [hidden, hidden]),
    bq: w('attention.self.query.bias', [hidden]),
    wk: w('attention.self.key.weight', [hidden, hidden]),
    bk: w('attention.self.key.bias', [hidden]),
    wv: w('attention.self.value.weight', [hidden, hidden]),
    bv: w('attention.self.value.bias', [hidden]),
    wo: w('attention.output.dense.weight', [hidden, hidden]),
    bo: w('attention.output.dense.bias', [hidden]),
    g1: w('attention.output.LayerNorm.weight', [hidden]),
    be1: w('attention.output.LayerNorm.bias', [hidden]),
    w1: w('intermediate.dense.weight', [ffn, hidden]),
    b1: w('intermediate.dense.bias', [ffn]),
    w2: w('output.dense.weight', [hidden, ffn]),
    b2: w('output.dense.bias', [hidden]),
    g2: w('output.LayerNorm.weight', [hidden]),
    be2: w('output.LayerNorm.bias', [hidden]),
  };
}

// Standard ONNX ops (opset 17): input [T, hidden] -> output [T, hidden].
function buildStandard(tensors, cfg) {
  const { layers, hidden, heads, ffn, eps } = cfg;
  const d = hidden / heads;
  const g = new GraphBuilder();
  const splitShape = g.int64s('shape_t_h_d', [0, heads, d]); // 0: copy T
  const mergeShape = g.int64s('shape_t_hidden', [0, hidden]);
  const scale = g.floats('scale', [], Float32Array.of(1 / Math.sqrt(d)));
  const sqrt2 = g.floats('sqrt2', [], Float32Array.of(Math.SQRT2));
  const one = g.floats('one', [], Float32Array.of(1));
  const half = g.floats('half', [], Float32Array.of(0.5));
  const linear = (x, name, w, b, out, inp) =>
    g.node('Add', [g.node('MatMul', [x, g.floats(`${name}.wt`, [inp, out], transpose(w, out, inp))]),
                   g.floats(`${name}.b`, [out], b)]);
  let x = 'input';
  for (let l = 0; l < layers; l++) {
    const W = layerWeights(tensors, l, hidden, ffn);
    const p = `l${l}`;
    const q = linear(x, `${p}.q`, W.wq, W.bq, hidden, hidden);
    const k = linear(x, `${p}.k`, W.wk, W.bk, hidden, hidden);
    const v = linear(x, `${p}.v`, W.wv, W.bv, hidden, hidden);
    const qh = g.node('Transpose', [g.node('Reshape', [q, splitShape])], { perm: [1, 0, 2] }); // [H,T,D]
    const kt = g.node('Transpose', [g.node('Reshape', [k, splitShape])], { perm: [1, 2, 0] }); // [H,D,T]
    const vh = g.node('Transpose', [g.node('Reshape', [v, splitShape])], { perm: [1, 0, 2] }); // [H,T,D]
    const scores = g.node('Mul', [g.node('MatMul', [qh, kt]), scale]);                          // [H,T,T]
    const probs = g.node('Softmax', [scores], { axis: { int: -1 } });
    const ctx = g.node('Transpose', [g.node('MatMul', [probs, vh])], { perm: [1, 0, 2] });     // [T,H,D]
    const merged = g.node('Reshape', [ctx, mergeShape]);                                         // [T,hidden]
    const attn = linear(merged, `${p}.o`, W.wo, W.bo, hidden, hidden);
    const a = g.node('LayerNormalization',
      [g.node('Add', [attn, x]), g.floats(`${p}.ln1.g`, [hidden], W.g1), g.floats(`${p}.ln1.b`, [hidden], W.be1)],
      { axis: { int: -1 }, epsilon: { float: eps } });
    const f = linear(a, `${p}.ffn1`, W.w1, W.b1, ffn, hidden);
    // exact GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt 2)); ORT fuses it.
    const erf = g.node('Erf', [g.node('Div', [f, sqrt2])]);
    const h = g.node('Mul', [g.node('Mul', [f, g.node('Add', [erf, one])]), half]);
    const m = linear(h, `${p}.ffn2`, W.w2, W.b2, hidden, ffn);
    x = g.node('LayerNormalization',
      [g.node('Add', [m, a]), g.floats(`${p}.ln2.g`, [hidden], W.g2), g.floats(`${p}.ln2.b`, [hidden], W.be2)],
      { axis: { int: -1 }, epsilon: { float: eps } }, '', l === layers - 1 ? 'output' : undefined);
  }
  return {
    bytes: g.model([['input', ['T', hidden]]], [['output', ['T', hidden]]], [['', 17]]),
    dims: (t) => [t, hidden],
  };
}

// com.microsoft contrib ops as ORT's transformer optimizer writes BERT: Attention (packed
// QKV), MatMul, SkipLayerNormalization (with the dense bias), BiasGelu.
// input [1, T, hidden] -> output [1, T, hidden].
function buildFused(tensors, cfg) {
  const { layers, hidden, heads, ffn, eps } = cfg;
  const g = new GraphBuilder();
  const ms = 'com.microsoft';
  let x = 'input';
  for (let l = 0; l < layers; l++) {
    const W = layerWeights(tensors, l, hidden, ffn);
    const p = `l${l}`;
    // weights [hidden, 3*hidden]: row i = input feature i, columns Q | K | V outputs
    const wqkv = new Float32Array(hidden * 3 * hidden);
    for (const [part, w] of [[0, W.wq], [1, W.wk], [2, W.wv]]) {
      for (let o = 0; o < hidden; o++) {
        for (let i = 0; i < hidden; i++) wqkv[i * 3 * hidden + part * hidden + o] = w[o * hidden + i];
      }
    }
    const bqkv = new Float32Array(3 * hidden);
    bqkv.set(W.bq, 0);
    bqkv.set(W.bk, hidden);
    bqkv.set(W.bv, 2 * hidden);
    const ctx = g.node('Attention',
      [x, g.floats(`${p}.qkv.w`, [hidden, 3 * hidden], wqkv), g.floats(`${p}.qkv.b`, [3 * hidden], bqkv)],
      { num_heads: { int: heads } }, ms);
    const attn = g.node('MatMul', [ctx, g.floats(`${p}.o.wt`, [hidden, hidden], transpose(W.wo, hidden, hidden))]);
    const a = g.node('SkipLayerNormalization',
      [attn, x, g.floats(`${p}.ln1.g`, [hidden], W.g1), g.floats(`${p}.ln1.b`, [hidden], W.be1),
       g.floats(`${p}.o.b`, [hidden], W.bo)],
      { epsilon: { float: eps } }, ms);
    const f = g.node('MatMul', [a, g.floats(`${p}.ffn1.wt`, [hidden, ffn], transpose(W.w1, ffn, hidden))]);
    const h = g.node('BiasGelu', [f, g.floats(`${p}.ffn1.b`, [ffn], W.b1)], {}, ms);
    const m = g.node('MatMul', [h, g.floats(`${p}.ffn2.wt`, [ffn, hidden], transpose(W.w2, hidden, ffn))]);
    x = g.node('SkipLayerNormalization',
      [m, a, g.floats(`${p}.ln2.g`, [hidden], W.g2), g.floats(`${p}.ln2.b`, [hidden], W.be2),
       g.floats(`${p}.ffn2.b`, [hidden], W.b2)],
      { epsilon: { float: eps } }, ms, l === layers - 1 ? 'output' : undefined);
  }
  return {
    bytes: g.model([['input', [1, 'T', hidden]]], [['output', [1, 'T', hidden]]], [['', 17], [ms, 1]]),
    dims: (t) => [1, t, hidden],
  };
}

// ---------------------------------------------------------------- main

function median(sorted) {
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

function round(ms) {
  return Math.round(ms * 1000) / 1000;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (os.endianness() !== 'LE') throw new Error('this script assumes a little-endian machine');

  const tensors = readSafetensors(opts.weights);
  const [hidden, hiddenIn] = shape2d(tensors, 'encoder.layer.0.attention.self.query.weight');
  if (hidden !== hiddenIn) {
    throw new Error(`weights: encoder.layer.0.attention.self.query.weight has shape [${hidden},${hiddenIn}], expected square`);
  }
  const ffn = shape2d(tensors, 'encoder.layer.0.intermediate.dense.weight')[0];
  if (hidden % opts.heads !== 0) throw new Error(`--heads ${opts.heads} does not divide hidden ${hidden}`);
  const cfg = { layers: opts.layers, hidden, heads: opts.heads, ffn, eps: opts.eps };

  // All inputs are checked before the (slow) session creation.
  const inputs = new Map();
  for (const t of opts.lengths) {
    const file = path.join(opts.io, `input-${t}.bin`);
    let buf;
    try {
      buf = fs.readFileSync(file);
    } catch (e) {
      throw new Error(`cannot read input ${file}: ${e.code ?? e.message}`);
    }
    if (buf.length !== 4 * t * hidden) {
      throw new Error(`${file} has ${buf.length} bytes, expected ${4 * t * hidden} (T=${t} x hidden ${hidden} float32)`);
    }
    const data = new Float32Array(t * hidden);
    new Uint8Array(data.buffer).set(buf);
    inputs.set(t, data);
  }

  const built = opts.graph === 'fused' ? buildFused(tensors, cfg) : buildStandard(tensors, cfg);
  tensors.clear();

  const sessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: opts.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  };
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(built.bytes, sessionOptions);
  built.bytes = null; // the session holds its own copy; a serving process keeps only that
  const sessionMs = performance.now() - t0;
  console.log(JSON.stringify({
    engine: 'onnxruntime', version: ORT_VERSION, graph: opts.graph, session_ms: round(sessionMs), threads: opts.threads,
  }));

  // One length: a warm-up run, then `repeat` timed runs; the last output is written out.
  const timeLength = async (t, repeat) => {
    const feeds = { input: new ort.Tensor('float32', inputs.get(t), built.dims(t)) };
    let result = await session.run(feeds); // warm-up
    const times = [];
    for (let r = 0; r < repeat; r++) {
      const start = performance.now();
      result = await session.run(feeds);
      times.push(performance.now() - start);
    }
    const out = result.output.data;
    if (out.length !== t * hidden) throw new Error(`T=${t}: output has ${out.length} values, expected ${t * hidden}`);
    fs.writeFileSync(path.join(opts.io, `ort-${opts.graph}-output-${t}.bin`),
      new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
    times.sort((a, b) => a - b);
    console.log(JSON.stringify({
      T: t, median_ms: round(median(times)), best_ms: round(times[0]), worst_ms: round(times[times.length - 1]), runs: repeat,
    }));
  };
  if (opts.serve) {
    // The caller's requests, one at a time: it times other engines between them.
    for await (const line of readline.createInterface({ input: process.stdin, terminal: false })) {
      const m = /^\s*(\d+)\s+(\d+)\s*$/.exec(line);
      if (!m) throw new Error(`--serve: bad request '${line}', expected "T R"`);
      const t = Number(m[1]), repeat = Number(m[2]);
      if (!inputs.has(t)) throw new Error(`--serve: T=${t} is not one of --lengths`);
      if (repeat < 1) throw new Error(`--serve: R=${repeat}, expected >= 1`);
      await timeLength(t, repeat);
    }
  } else {
    for (const t of opts.lengths) await timeLength(t, opts.repeat);
  }
  await session.release();
}

main().catch((e) => {
  process.stderr.write(`bert_encoder.mjs: ${e instanceof UsageError ? `${e.message}\n${USAGE}` : e.message}\n`);
  process.exit(1);
});
