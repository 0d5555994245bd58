// Checks bert_encoder.mjs against a float64 JavaScript encoder: runs both graphs as a child
// process on random inputs and prints ||got - want|| / ||want|| per graph and T.
//   node check.mjs                                   own weights: 2 layers, hidden 64, 4 heads,
//                                                    ffn 128, every bias/gamma/beta nonzero
//   node check.mjs --weights F --layers L --heads H  a given safetensors file
//   [--lengths 1,2,7,64,200] [--tol 1e-4] [--threads 1]
// Also checks that a missing tensor, a wrong shape and a missing input file exit 1 with a
// message. Exits 1 when any error is over --tol.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.join(here, 'bert_encoder.mjs');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const lengths = (args.lengths ?? '1,2,7,64,200').split(',').map(Number);
const tol = Number(args.tol ?? 1e-4);
const threads = args.threads ?? '1';
const eps = 1e-12;

// Deterministic normal numbers (xorshift + Box-Muller).
let state = 0x9e3779b9;
function uniform() {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return (state + 0.5) / 4294967296;
}
function normal() {
  return Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}
function randomArray(n, scale, offset = 0) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = offset + scale * normal();
  return a;
}

function shapesOf(layers, hidden, ffn) {
  const s = {};
  for (let l = 0; l < layers; l++) {
    const p = `encoder.layer.${l}.`;
    for (const n of ['query', 'key', 'value']) {
      s[`${p}attention.self.${n}.weight`] = [hidden, hidden];
      s[`${p}attention.self.${n}.bias`] = [hidden];
    }
    s[`${p}attention.output.dense.weight`] = [hidden, hidden];
    s[`${p}attention.output.dense.bias`] = [hidden];
    s[`${p}attention.output.LayerNorm.weight`] = [hidden];
    s[`${p}attention.output.LayerNorm.bias`] = [hidden];
    s[`${p}intermediate.dense.weight`] = [ffn, hidden];
    s[`${p}intermediate.dense.bias`] = [ffn];
    s[`${p}output.dense.weight`] = [hidden, ffn];
    s[`${p}output.dense.bias`] = [hidden];
    s[`${p}output.LayerNorm.weight`] = [hidden];
    s[`${p}output.LayerNorm.bias`] = [hidden];
  }
  return s;
}

function writeSafetensors(file, tensors) { // tensors: {name: {shape, data}}
  const header = {};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + 4 * t.data.length] };
    offset += 4 * t.data.length;
  }
  header.__metadata__ = { note: 'check.mjs' };
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8 + 3); // odd padding: the reader must not assume alignment
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const parts = [len, Buffer.from(json)];
  for (const t of Object.values(tensors)) parts.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  fs.writeFileSync(file, Buffer.concat(parts));
}

function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.toString('utf8', 8, 8 + n));
  const out = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [b, e] = info.data_offsets;
    const data = new Float32Array((e - b) / 4);
    new Uint8Array(data.buffer).set(buf.subarray(8 + n + b, 8 + n + e));
    out[name] = { shape: info.shape, data };
  }
  return out;
}

// ---------------------------------------------------------------- float64 reference

function linear(x, t, w, b, out, inp) { // x [t, inp], w [out, inp] -> [t, out]
  const y = new Float64Array(t * out);
  for (let i = 0; i < t; i++) {
    for (let o = 0; o < out; o++) {
      let s = b[o];
      const xi = i * inp, wo = o * inp;
      for (let k = 0; k < inp; k++) s += x[xi + k] * w[wo + k];
      y[i * out + o] = s;
    }
  }
  return y;
}

function layerNorm(x, t, n, gamma, beta) {
  const y = new Float64Array(t * n);
  for (let i = 0; i < t; i++) {
    let mean = 0;
    for (let k = 0; k < n; k++) mean += x[i * n + k];
    mean /= n;
    let v = 0;
    for (let k = 0; k < n; k++) v += (x[i * n + k] - mean) ** 2;
    const inv = 1 / Math.sqrt(v / n + eps);
    for (let k = 0; k < n; k++) y[i * n + k] = (x[i * n + k] - mean) * inv * gamma[k] + beta[k];
  }
  return y;
}

function erf(x) { // Abramowitz-Stegun 7.1.26 is too coarse; use a series / continued fraction
  const ax = Math.abs(x);
  let r;
  if (ax < 3) { // Taylor series: erf x = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1))
    let term = ax, sum = ax;
    for (let n = 1; n < 200; n++) {
      term *= -ax * ax / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    r = 2 / Math.sqrt(Math.PI) * sum;
  } else { // continued fraction for erfc
    let f = 0;
    for (let n = 60; n >= 1; n--) f = (n / 2) / (ax + f);
    r = 1 - Math.exp(-ax * ax) / Math.sqrt(Math.PI) / (ax + f);
  }
  return x < 0 ? -r : r;
}

function encoder(x0, t, w, layers, hidden, heads, ffn) {
  const d = hidden / heads;
  let x = Float64Array.from(x0);
  for (let l = 0; l < layers; l++) {
    const g = (n) => w[`encoder.layer.${l}.${n}`].data;
    const q = linear(x, t, g('attention.self.query.weight'), g('attention.self.query.bias'), hidden, hidden);
    const k = linear(x, t, g('attention.self.key.weight'), g('attention.self.key.bias'), hidden, hidden);
    const v = linear(x, t, g('attention.self.value.weight'), g('attention.self.value.bias'), hidden, hidden);
    const ctx = new Float64Array(t * hidden);
    const p = new Float64Array(t);
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < t; i++) {
        let max = -Infinity;
        for (let j = 0; j < t; j++) {
          let s = 0;
          for (let c = 0; c < d; c++) s += q[i * hidden + h * d + c] * k[j * hidden + h * d + c];
          p[j] = s / Math.sqrt(d);
          max = Math.max(max, p[j]);
        }
        let sum = 0;
        for (let j = 0; j < t; j++) sum += (p[j] = Math.exp(p[j] - max));
        for (let c = 0; c < d; c++) {
          let s = 0;
          for (let j = 0; j < t; j++) s += p[j] * v[j * hidden + h * d + c];
          ctx[i * hidden + h * d + c] = s / sum;
        }
      }
    }
    const o = linear(ctx, t, g('attention.output.dense.weight'), g('attention.output.dense.bias'), hidden, hidden);
    for (let i = 0; i < o.length; i++) o[i] += x[i];
    const a = layerNorm(o, t, hidden, g('attention.output.LayerNorm.weight'), g('attention.output.LayerNorm.bias'));
    const f = linear(a, t, g('intermediate.dense.weight'), g('intermediate.dense.bias'), ffn, hidden);
    for (let i = 0; i < f.length; i++) f[i] = 0.5 * f[i] * (1 + erf(f[i] / Math.SQRT2));
    const m = linear(f, t, g('output.dense.weight'), g('output.dense.bias'), hidden, ffn);
    for (let i = 0; i < m.length; i++) m[i] += a[i];
    x = layerNorm(m, t, hidden, g('output.LayerNorm.weight'), g('output.LayerNorm.bias'));
  }
  return x;
}

// ---------------------------------------------------------------- run

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-check-'));
let failed = false;
try {
  let weightsFile, layers, heads;
  if (args.weights) {
    weightsFile = args.weights;
    layers = Number(args.layers ?? 1);
    heads = Number(args.heads ?? 12);
  } else {
    layers = 2; heads = 4;
    const hidden = 64, ffn = 128, tensors = {};
    for (const [name, shape] of Object.entries(shapesOf(layers, hidden, ffn))) {
      const n = shape.reduce((a, b) => a * b, 1);
      const isGamma = name.endsWith('LayerNorm.weight');
      const scale = shape.length === 2 ? 1 / Math.sqrt(shape[1]) : isGamma ? 0.2 : 0.5;
      tensors[name] = { shape, data: randomArray(n, scale, isGamma ? 1 : 0) };
    }
    weightsFile = path.join(dir, 'w.st');
    writeSafetensors(weightsFile, tensors);
  }
  const w = readSafetensors(weightsFile);
  const hidden = w['encoder.layer.0.attention.self.query.weight'].shape[0];
  const ffn = w['encoder.layer.0.intermediate.dense.weight'].shape[0];
  console.log(`weights ${weightsFile}: ${layers} layers, hidden ${hidden}, ${heads} heads, ffn ${ffn}`);

  const want = new Map();
  for (const t of lengths) {
    const x = randomArray(t * hidden, 1);
    fs.writeFileSync(path.join(dir, `input-${t}.bin`), x);
    want.set(t, encoder(x, t, w, layers, hidden, heads, ffn));
  }
  for (const graph of ['standard', 'fused']) {
    const run = spawnSync(process.execPath, [script, '--weights', weightsFile, '--layers', String(layers),
      '--heads', String(heads), '--eps', String(eps), '--threads', threads, '--graph', graph, '--io', dir,
      '--lengths', lengths.join(','), '--repeat', '2'], { encoding: 'utf8', maxBuffer: 1 << 24 });
    if (run.status !== 0) {
      console.log(`${graph}: exit ${run.status}: ${run.stderr.trim()}`);
      failed = true;
      continue;
    }
    const out = run.stdout;
    const lines = out.trim().split('\n').map((l) => JSON.parse(l));
    if (lines[0].engine !== 'onnxruntime' || lines[0].graph !== graph || lines.length !== lengths.length + 1) {
      console.log(`${graph}: unexpected stdout\n${out}`);
      failed = true;
    }
    for (const t of lengths) {
      const buf = fs.readFileSync(path.join(dir, `ort-${graph}-output-${t}.bin`));
      const got = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
      const ref = want.get(t);
      let num = 0, den = 0;
      for (let i = 0; i < ref.length; i++) {
        num += (got[i] - ref[i]) ** 2;
        den += ref[i] ** 2;
      }
      const rel = Math.sqrt(num / den);
      const ok = got.length === ref.length && rel <= tol;
      if (!ok) failed = true;
      console.log(`${graph.padEnd(8)} T=${String(t).padStart(4)}: relative error ${rel.toExponential(2)} ${ok ? 'ok' : 'FAIL'}`);
    }
  }

  // Errors: exit 1 with a message on stderr.
  const small = {};
  for (const [name, shape] of Object.entries(shapesOf(1, 8, 16))) {
    small[name] = { shape, data: randomArray(shape.reduce((a, b) => a * b, 1), 0.3) };
  }
  const expectError = (what, file, io, lengthsArg, pattern) => {
    const r = spawnSync(process.execPath, [script, '--weights', file, '--layers', '1', '--heads', '2',
      '--io', io, '--lengths', lengthsArg], { encoding: 'utf8' });
    const ok = r.status === 1 && pattern.test(r.stderr);
    if (!ok) failed = true;
    console.log(`error: ${what}: ${ok ? 'ok' : 'FAIL'} (exit ${r.status}) ${r.stderr.trim().split('\n')[0]}`);
  };
  const errDir = path.join(dir, 'err');
  fs.mkdirSync(errDir);
  fs.writeFileSync(path.join(errDir, 'input-3.bin'), randomArray(3 * 8, 1));
  const missing = { ...small };
  delete missing['encoder.layer.0.output.dense.bias'];
  writeSafetensors(path.join(errDir, 'missing.st'), missing);
  expectError('missing tensor', path.join(errDir, 'missing.st'), errDir, '3', /missing tensor encoder\.layer\.0\.output\.dense\.bias/);
  const wrong = { ...small, 'encoder.layer.0.intermediate.dense.bias': { shape: [15], data: new Float32Array(15) } };
  writeSafetensors(path.join(errDir, 'wrong.st'), wrong);
  expectError('wrong shape', path.join(errDir, 'wrong.st'), errDir, '3', /intermediate\.dense\.bias has shape \[15\], expected \[16\]/);
  writeSafetensors(path.join(errDir, 'ok.st'), small);
  expectError('missing input', path.join(errDir, 'ok.st'), errDir, '3,5', /input-5\.bin/);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(failed ? 'FAILED' : 'all ok');
process.exit(failed ? 1 : 0);
