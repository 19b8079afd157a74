"""TTFT: speculative round 1 vs target-only first step, interleaved, on the packaged pair.

    python -m tools.measure_ttft [max new tokens, default 6]
"""
import statistics, sys, time
import torch
from specviz.engine.pairs import load_pair
from specviz.engine.engine import Engine, RunSettings
from specviz.settings.bounds import CODE_PROMPT, STORY_PROMPT
t0 = time.time()
pair = load_pair()
e = Engine.from_pair(pair); e.warm_up()
print("loaded", pair.draft_name, pair.target_name, e.dtype, f"{time.time()-t0:.0f}s", torch.get_num_threads(), "threads", flush=True)
prompts = {"code": CODE_PROMPT, "story": STORY_PROMPT, "fact": "Explain in a short paragraph how photosynthesis works."}
res = {}
for rep in range(3):
    for name, p in prompts.items():
        s = RunSettings(k=4, temperature=0, max_new_tokens=int(sys.argv[1]) if len(sys.argv) > 1 else 6)
        b = e.baseline(p, s)
        run = e.start(p, s); first = next(iter(run)); sp = first.draft_time_s + first.verify_time_s
        for _ in run: pass
        res.setdefault(name, []).append((b.first_token_time_s, sp))
        print(f"{name} rep{rep} target-only {b.first_token_time_s*1000:.0f} ms  speculative {sp*1000:.0f} ms  ratio {sp/b.first_token_time_s:.2f}  prompt {len(run.prompt_ids)} tok", flush=True)
for name, v in res.items():
    r = [s/b for b, s in v]
    print(f"{name}: target-only median {statistics.median(b for b,_ in v)*1000:.0f} ms, speculative median {statistics.median(s for _,s in v)*1000:.0f} ms, ratio median {statistics.median(r):.2f} (min {min(r):.2f} max {max(r):.2f})")
