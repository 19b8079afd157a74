"""Linear layers computed by onnxruntime's MatMulNBits from a GGUF file's blocks as they are (the gguf-ort path of
kernels.py; the blocks repacked by ort_blocks.py).

A group is one session: the layers that read one input (a block's q, k and v; its gate and up) computed by one run,
their rows stacked, one MatMulNBits node per block type in it (a block's v may be Q6_K beside a Q4_K q and k). A Q4_K
node adds its minimums' term, Σ over groups of 32 inputs of minimum · the group's input sum, from a small matmul
of the per-group sums; a layer's bias is added last. Each of the model's linear layers becomes an OrtLinear asking
its group for its columns: the first to see an input runs the session, the others take their slices of that run.

    apply_path(model, GGUF_ORT, blocks=layers_of(ort_blocks(name)))   # kernels.py: each layer with blocks on its group

A run binds the input and the outputs by address (io_binding) to torch's memory, so nothing is copied in or out,
and computes with torch's threads (intra-op = torch.get_num_threads() when the session is made, one inter-op,
sequential, no spinning: `session_of`). `accuracy_level` 4 quantizes each block of inputs to int8 (VNNI dot products
where the CPU has them) and, with uint8 zero points, computes each row alone: rows computed together equal rows alone
bit for bit (kernel_choice measures it like every path's). The int8 inputs move an output by about 0.5 % of the
outputs' size against the file's weights in float32, and so turn a difference in an input's last bit (attention sums
a row in another order beside other rows) into a step of a code now and then: a verify pass's rows then differ from
one-token steps by more than on float16-fbgemm (kernel_choice.check_rows measures the loaded model).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from specviz.models.gguf_blocks import EMBEDDING
from specviz.settings.bounds import Progress
from specviz.models.layers import PackedLayer
from specviz.models.ort_blocks import GROUP, KINDS, NBits, OrtBlocks, Part, Stored, ort_blocks, part_of

ACCURACY = 4  # MatMulNBits' accuracy_level: int8 inputs, the one level whose rows are independent (measured)
OPSETS = (("", 21), ("com.microsoft", 1))


def graph_of(parts: list[Part], biases: list[np.ndarray | None], accuracy: int = ACCURACY):
    """The ONNX model of one group: input x (M, K) float32, an output y{i} (M, N_i) per part. Tensors kept in the
    blocks file stay there (external data, mapped by onnxruntime); those in memory are copied into the model."""
    from onnx import TensorProto, helper

    k = parts[0].k
    nodes, tensors = [], []
    if any(p.kind.minimum for p in parts):  # the per-group input sums, shared by the Q4_K nodes
        tensors.append(_array("group_shape", np.array([-1, k // GROUP, GROUP], np.int64)))
        tensors.append(_array("last_axis", np.array([-1], np.int64)))
        nodes += [helper.make_node("Reshape", ["x", "group_shape"], ["x_groups"]),
                  helper.make_node("ReduceSum", ["x_groups", "last_axis"], ["sums"], keepdims=0)]
    for i, (part, bias) in enumerate(zip(parts, biases)):
        names = {t: f"{t}{i}" for t in part.tensors}
        tensors += [_tensor(names[t], a) for t, a in part.tensors.items()]
        terms = []  # added to the codes' product, in this order: the minimums' term, the bias
        if part.kind.minimum:
            nodes.append(helper.make_node("MatMul", ["sums", names["minimum"]], [f"minimum_term{i}"]))
            terms.append(f"minimum_term{i}")
        if bias is not None:
            tensors.append(_array(f"bias{i}", bias.astype(np.float32)))
            terms.append(f"bias{i}")
        out = f"codes_y{i}" if terms else f"y{i}"
        nodes.append(helper.make_node(
            "MatMulNBits", ["x", names["packed"], names["scale"], names["zero"]], [out], domain="com.microsoft",
            K=k, N=sum(part.outs), bits=part.kind.bits, block_size=part.kind.block, accuracy_level=accuracy))
        for j, term in enumerate(terms):
            total = f"y{i}" if j == len(terms) - 1 else f"partial_y{i}_{j}"
            nodes.append(helper.make_node("Add", [out, term], [total]))
            out = total
    graph = helper.make_graph(
        nodes, "specviz_group", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", k])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, ["M", sum(p.outs)]) for i, p in enumerate(parts)],
        tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in OPSETS])


def _array(name: str, array: np.ndarray):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.ascontiguousarray(array), name)


def _tensor(name: str, t):
    """An initializer: the array itself, or a reference to its bytes in the blocks file (by name: onnxruntime takes
    no absolute path there; the session is told the folder)."""
    if not isinstance(t, Stored):
        return _array(name, t)
    from onnx import TensorProto, helper

    proto = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(np.dtype(t.dtype)), dims=t.shape,
                        data_location=TensorProto.EXTERNAL)
    for key, value in (("location", t.path.name), ("offset", str(t.offset)), ("length", str(t.length))):
        entry = proto.external_data.add()
        entry.key, entry.value = key, value
    return proto


def session_of(model, folder: Path | None, threads: int | None = None):
    """An onnxruntime session of `model` on the CPU with torch's threads (or `threads`), one inter-op thread, its
    pool's threads sleeping as soon as a run ends. A model makes a session a group (113 for the packaged target)
    and calls them between torch's own operations: pools left spinning after their runs (onnxruntime's default)
    took 40 to 90 ms a layer instead of 0.3 on two shared cores, one global pool spinning 1 to 5 ms (measured
    2026-12-06, 24 layers of 1536 × 1536 between torch matmuls)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.enable_cpu_mem_arena = False  # an arena a session keeps its largest pass's intermediates: 113 of them
    options.enable_mem_pattern = False  # held 0.5 GB after one pass over 64 tokens, and grow with a prompt
    options.log_severity_level = 3  # warnings about unused optimizations are not the user's business
    if folder is not None:
        options.add_session_config_entry("session.model_external_initializers_file_folder_path", str(folder))
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


class OrtGroup:
    """One session computing the layers of a group; `output` hands each its columns of a run. `biases`, one per part:
    given at once, or None where each member brings its own as it is put on a model (`layer`), the session made at
    the first run, when all have."""

    def __init__(self, parts: list[Part], biases: list[np.ndarray | None] | None = None, accuracy: int = ACCURACY):
        folders = {t.path.parent for p in parts for t in p.tensors.values() if isinstance(t, Stored)}
        if len(folders) > 1:
            raise ValueError(f"one group's blocks lie in one folder, not {sorted(map(str, folders))}")
        self.parts, self.biases, self.accuracy = parts, biases, accuracy
        self.folder = next(iter(folders), None)
        self.k, self.widths = parts[0].k, [sum(p.outs) for p in parts]
        self.columns = {}  # member → (output, first column, last column + 1)
        self.kinds = {m: part.kind.name for part in parts for m in part.members}
        for i, part in enumerate(parts):
            starts = np.cumsum((0, *part.outs))
            self.columns |= {m: (i, int(a), int(b)) for m, a, b in zip(part.members, starts, starts[1:])}
        self._bias: dict[str, np.ndarray | None] = {}  # each member put on a model: its bias (the weights not kept)
        self.session = self.binding = None
        self._input, self._pending = None, {}
        if biases is not None:
            self._start()

    def layer(self, name: str, linear: nn.Linear) -> OrtLinear:
        """The member `name` in place of `linear` (its bias kept for the session); ValueError where the blocks are
        not that layer's."""
        part = next(p for p in self.parts if name in p.members)
        n = part.outs[part.members.index(name)]
        if (linear.out_features, linear.in_features) != (n, part.k):
            raise ValueError(f"the GGUF's blocks for {name} are {n} × {part.k}, the model's layer "
                             f"{linear.out_features} × {linear.in_features}: they are not this model's")
        self._bias[name] = None if linear.bias is None else linear.bias.detach().float().numpy()
        return OrtLinear(self, name)

    def _start(self) -> None:
        if self.biases is None:
            missing = [m for m in self.columns if m not in self._bias]
            if missing:
                raise ValueError(f"a group runs with all its layers; {', '.join(missing)} were not put on the model")
            self.biases = [_biases(self._bias, p) for p in self.parts]
        self.session = session_of(graph_of(self.parts, self.biases, self.accuracy), self.folder)
        self.binding = self.session.io_binding()

    def run(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Every part's outputs (M, N_i) for x (M, K) float32, contiguous: bound by address, no copies."""
        outs = [torch.empty(len(x), n) for n in self.widths]
        if len(x) == 0:
            return outs
        if self.session is None:
            self._start()
        self.binding.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.data_ptr())
        for i, y in enumerate(outs):
            self.binding.bind_output(f"y{i}", "cpu", 0, np.float32, list(y.shape), y.data_ptr())
        self.session.run_with_iobinding(self.binding)
        return outs

    def output(self, x: torch.Tensor, member: str) -> torch.Tensor:
        """`member`'s outputs for x (…, K): its columns of the run on this very input (the layers of a group are
        called one after another on one tensor), made by the first member to ask."""
        if x is not self._input or member not in self._pending:
            flat = x.reshape(-1, self.k).to(torch.float32).contiguous()
            outs = self.run(flat)
            self._input = x
            self._pending = {m: outs[i][:, a:b].contiguous() for m, (i, a, b) in self.columns.items()}
        y = self._pending.pop(member)
        if not self._pending:
            self._input = None  # every member served: hold the input no longer
        return y.reshape(*x.shape[:-1], y.shape[-1])


class OrtLinear(PackedLayer):
    """A linear layer computed by its group's session (y = x Wᵀ + b, W the file's blocks)."""

    def __init__(self, group: OrtGroup, name: str):
        super().__init__()
        self.group, self.name = group, name
        i, first, last = group.columns[name]
        self.in_features, self.out_features = group.k, last - first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.group.output(x, self.name)


@dataclass(frozen=True)
class Member:
    """One layer of a group, as kernels' FileBlocks hands it to the layer it replaces (`layer`)."""

    group: OrtGroup
    name: str

    def layer(self, linear: nn.Linear) -> OrtLinear:
        return self.group.layer(self.name, linear)


def layers_of(blocks: OrtBlocks) -> dict:
    """The blocks by module name, as kernels.apply_path reads a path's: each layer with blocks its `Member` of one
    group shared by the group's layers, the embedding its 4-bit rows (EMBEDDING) where the file has them."""
    out = {}
    for parts in blocks.groups:
        group = OrtGroup(parts)
        out |= {m: Member(group, m) for m in group.columns}
    return out | ({} if blocks.embedding is None else {EMBEDDING: blocks.embedding})


def read_for_ort(name: str, progress: Progress | None = None) -> dict:
    """A packaged model's blocks for the gguf-ort path (ort_blocks.ort_blocks), by module name (layers_of)."""
    return layers_of(ort_blocks(name, progress))


def _biases(bias: dict[str, np.ndarray | None], part: Part) -> np.ndarray | None:
    """A part's members' biases stacked (zeros for a member without), or None where none has one."""
    if all(bias[m] is None for m in part.members):
        return None
    return np.concatenate([np.zeros(n, np.float32) if bias[m] is None else bias[m]
                           for m, n in zip(part.members, part.outs)])


def ort_said(model: nn.Module) -> str:
    """Which layers onnxruntime computes, from which blocks, in how many calls a step ('' where none)."""
    layers = [m for m in model.modules() if isinstance(m, OrtLinear)]
    if not layers:
        return ""
    groups = {id(layer.group): layer.group for layer in layers}.values()
    kinds = sorted({kind for g in groups for kind in g.kinds.values()})
    return (f"{len(layers)} linear layers computed from the GGUF file's {' and '.join(kinds)} blocks by onnxruntime's "
            f"MatMulNBits in {len(groups)} calls a step (a block's q, k, v and its gate, up one call each)")


def q4_stand_in(codes: torch.Tensor, step: torch.Tensor, minimum: torch.Tensor) -> OrtLinear:
    """One layer from codes in groups of 32 with a step and a minimum (layers.rounded's), as a Q4_K layer of the path
    (kernel_choice times and checks a stack of them)."""
    weight = NBits(KINDS["Q4_K"], codes.to(torch.uint8).numpy(), step.float().numpy(), minimum.float().numpy())
    group = OrtGroup([part_of([("layer", weight)])], [None])
    return OrtLinear(group, "layer")
