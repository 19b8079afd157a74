"""Is torch's int4 weight-only matmul usable on this CPU, and is it faster than float32 / int8 for a draft-sized layer?"""
import statistics, time, torch
print(torch.__version__, torch.backends.cpu.get_cpu_capability())
K, N = 896, 4864  # Qwen2.5-0.5B MLP: in 896 -> out 4864
w = torch.randn(N, K)
def tm(f, x, r=20):
    f(x); ts = []
    for _ in range(r):
        t0 = time.perf_counter(); f(x); ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3
group = 32
# per-group asymmetric quantization to 0..15, as torch's int4pack expects (scale, zero per group)
wg = w.reshape(N, K // group, group)
mn, mx = wg.amin(-1, keepdim=True), wg.amax(-1, keepdim=True)
scale = ((mx - mn).clamp(min=1e-6) / 15)
zero = mn + scale * 8  # torch's convention: w = (q - 8) * scale + zero
q = ((wg - mn) / scale).round().clamp(0, 15).to(torch.int32).reshape(N, K)
try:
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
    sz = torch.stack([scale.reshape(N, -1), zero.reshape(N, -1)], -1).transpose(0, 1).contiguous()  # (K/g, N, 2)
    f4 = lambda x: torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, group, sz)
    x = torch.randn(1, K)
    deq = ((q.reshape(N, K // group, group).float() - 8) * scale + zero).reshape(N, K)
    print("int4 max error vs dequantized", (f4(x) - x @ deq.T).abs().max().item())
    lin = torch.nn.Linear(K, N, bias=False); lin.weight.data = w
    from specviz.quant import Int8Linear
    i8 = Int8Linear(lin)
    with torch.inference_mode():
        for rows in (1, 32):
            x = torch.randn(rows, K)
            print(f"rows {rows}: float32 {tm(lin, x):.3f} ms  int8 {tm(i8, x):.3f} ms  int4 {tm(f4, x):.3f} ms")
except Exception as e:
    print("int4 failed:", type(e).__name__, str(e)[:300])
