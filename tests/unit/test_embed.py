import dataclasses
import json
import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from paramill.cli import main
from paramill.embed.features import Vocab, trigrams, words
from paramill.embed.model import ModelSpec, SentenceEncoder, build, load_model
from paramill.errors import InputError
from paramill.embed.megabatch import hardest_negatives
from paramill.embed.train import EmbedTrainSettings, read_pairs, train
from paramill.embed.data import PairSource
from ..conftest import stopped_when

SENTS = ["The man reads a book.", "A man is reading a book.", "The woman buys bread.",
         "Our neighbour sells an old car.", "The dog sleeps.", "It rains today in the city."]


def test_units():
    assert words("The Man's book.") == ["the", "man", "'", "s", "book", "."]
    assert trigrams("Ab c") == [" ab", "ab ", "b c"]
    vocab = Vocab.build([["a", "b", "a"], ["c"]], min_count=2)
    assert vocab.units == ["<pad>", "<unk>", "a"] and vocab.ids(["a", "zzz"]) == [2, 1]


def test_word_averaging_is_the_mean_of_its_embeddings():
    model = build(ModelSpec(units="word", components=("word",), dim=4), SENTS)
    emb = model.parts[0].embedding.weight
    ids = model.vocabs["word"].ids(words("The dog sleeps."))
    expected = emb[ids].mean(0)
    got = model(model.tensors(model.units(["The dog sleeps.", SENTS[5]])))[0]
    assert torch.allclose(got, expected, atol=1e-6)


@pytest.mark.parametrize("components,dim", [(("lstm",), 6), (("blstm",), 6), (("gran",), 5),
                                            (("trigram",), 5), (("word", "trigram"), 10),
                                            (("word", "lstm", "gran"), 16)])
def test_shapes_and_padding_do_not_change_a_sentence(components, dim):
    torch.manual_seed(0)
    model = build(ModelSpec(units="word", components=components, dim=5, hidden=6), SENTS).eval()
    assert model.dim == dim
    alone = model.encode(["The dog sleeps."])
    padded = model.encode(["The dog sleeps.", "It rains today in the city and the man reads."])
    assert alone.shape == (1, dim) and padded.shape == (2, dim)
    assert np.allclose(alone[0], padded[0], atol=1e-5)


def test_gran_follows_its_formula():
    torch.manual_seed(0)
    model = build(ModelSpec(units="word", components=("gran",), dim=3, hidden=4), SENTS).eval()
    gran = model.parts[0]
    ids = torch.tensor([model.vocabs["word"].ids(words("The dog sleeps."))])
    x = gran.embedding(ids)
    h, _ = gran.lstm(x)
    a = x * torch.sigmoid(gran.gate_x(x) + gran.gate_h(h))
    got = model(model.tensors(model.units(["The dog sleeps."])))
    assert torch.allclose(got, a.mean(1), atol=1e-6)


def test_blstm_averages_the_two_directions():
    torch.manual_seed(0)
    model = build(ModelSpec(units="word", components=("blstm",), dim=3, hidden=4), SENTS).eval()
    part = model.parts[0]
    ids = torch.tensor([model.vocabs["word"].ids(words("The dog sleeps."))])
    out, _ = part.lstm(part.embedding(ids))
    expected = ((out[..., :4] + out[..., 4:]) / 2).mean(1)
    assert torch.allclose(model(model.tensors(model.units(["The dog sleeps."]))), expected, atol=1e-6)


def test_combinations():
    add = build(ModelSpec(units="word", components=("word", "trigram"), combine="add", dim=4), SENTS).eval()
    word = add.parts[0](*add.tensors(add.units(["The dog."]))["word"])
    tri = add.parts[1](*add.tensors(add.units(["The dog."]))["trigram"])
    assert torch.allclose(add(add.tensors(add.units(["The dog."]))), word + tri)
    with pytest.raises(ValueError, match="one size"):
        ModelSpec(components=("word", "lstm"), combine="add", dim=4, hidden=6)
    with pytest.raises(ValueError, match="components"):
        ModelSpec(components=("cnn",))
    with pytest.raises(ValueError, match=r"at most once, got \['word', 'trigram', 'word'\]"):
        ModelSpec(components=("word", "trigram", "word"))  # a typo: two WORD models side by side


def test_margin_loss_hand_computed():
    from paramill.embed.graphstep import margin_step_loss

    g1, g2 = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])
    t1, t2 = torch.tensor([[0.0, 1.0]]), torch.tensor([[1.0, 0.0]])
    # cos(g1,g2)=0.7071, cos(g1,t1)=0, cos(g2,t2)=0.7071
    expected = max(0, 0.4 - 0.70710678 + 0.0) + max(0, 0.4 - 0.70710678 + 0.70710678)
    assert margin_step_loss(torch.cat([g1, g2, t1, t2]), 0.4).item() == pytest.approx(expected, abs=1e-6)


def test_stacked_margin_loss_is_the_loss_of_the_three_cosines():
    """The step's loss (g1, g2, t1, t2 stacked, normalised once) is the paper's hinge on
    ``cosine_similarity``, value and gradient."""
    import torch.nn.functional as F

    from paramill.embed.graphstep import margin_step_loss as stacked_margin_loss

    torch.manual_seed(0)
    g1, g2, t1, t2 = (torch.randn(7, 5, requires_grad=True) for _ in range(4))
    pos = F.cosine_similarity(g1, g2)
    expected = (F.relu(0.4 - pos + F.cosine_similarity(g1, t1))
                + F.relu(0.4 - pos + F.cosine_similarity(g2, t2))).mean()
    got = stacked_margin_loss(torch.cat([g1, g2, t1, t2]), 0.4)
    assert got.item() == pytest.approx(expected.item(), abs=1e-6) and expected.item() > 0
    want = torch.autograd.grad(expected, (g1, g2, t1, t2))
    for a, b in zip(torch.autograd.grad(got, (g1, g2, t1, t2)), want):
        assert torch.allclose(a, b, atol=1e-6)


def test_averaging_is_the_masked_mean_of_the_unit_vectors():
    """WORD/TRIGRAM's embedding_bag: each row's mean over its first ``length`` ids, padding
    (and an empty row: zeros) left out, and no gradient for the padding row 0."""
    from paramill.embed.model import Averaging

    torch.manual_seed(0)
    part = Averaging(10, 4)
    ids = torch.tensor([[3, 5, 5, 0], [7, 0, 0, 0], [0, 0, 0, 0], [2, 9, 1, 4]])
    lengths = torch.tensor([3, 1, 0, 4])
    got = part(ids, lengths)
    w = part.embedding.weight
    expected = torch.stack([w[[3, 5, 5]].mean(0), w[7], torch.zeros(4), w[[2, 9, 1, 4]].mean(0)])
    assert torch.allclose(got, expected, atol=1e-6)
    got.sum().backward()
    assert part.embedding.weight.grad[0].abs().sum() == 0
    assert torch.allclose(part.embedding.weight.grad[5], torch.full((4,), 2 / 3))


@pytest.mark.parametrize("components", [("word",), ("word", "trigram")])
def test_a_training_step_dispatches_few_torch_operations(tmp_path, monkeypatch, components):
    """On a GPU an averaging model's step costs what its operations cost to launch (H200,
    2026-11-27: about 330 a step, 13k pairs/s): s1, s2 and both negatives go through the
    model in one pass, the loss normalises once, Adam is fused. With the step in a CUDA graph
    (H100, 2026-11-28: 64k pairs/s), what is launched outside it sets the pace: a mega-batch's
    steps are assembled at once, and its pool encoded in one pass, so a step launches a few
    operations besides its own. Counted on the CPU, where the same operations dispatch."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    from paramill.embed import graphstep as steps_mod
    from paramill.embed import train as train_mod

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = Counter()
            self.inside = self.in_step = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[str(func)] += 1
            self.in_step += self.inside > 0
            return func(*args, **(kwargs or {}))

    counted, modes = Counter(), []
    epoch, step_fn = train_mod._epoch, steps_mod.EagerStep._step

    def counting(*args, **kwargs):
        with Count() as mode:
            modes.append(mode)
            result = epoch(*args, **kwargs)
        counted.update(mode.ops)
        return result

    def in_step(self, *args, **kwargs):
        modes[-1].inside += 1
        try:
            return step_fn(self, *args, **kwargs)
        finally:
            modes[-1].inside -= 1

    monkeypatch.setattr(train_mod, "_epoch", counting)
    monkeypatch.setattr(steps_mod.EagerStep, "_step", in_step)
    pairs = [(f"{a} {i}", f"{b} {i}") for i in range(40) for a, b in PAIRS]
    settings = EmbedTrainSettings(epochs=1, batch_size=20, megabatch=10)
    train(pairs, tmp_path / "m.pt", ModelSpec(components=components, dim=8, units="word"), settings)
    steps = -(-len(pairs) // settings.batch_size)
    per_step = sum(counted.values()) / steps
    outside = per_step - sum(m.in_step for m in modes) / steps
    assert counted["aten._fused_adam_.default"] == steps
    assert counted["aten._embedding_bag.default"] >= steps * len(components)
    # here (batch 20, megabatch 10): 129 (WORD) and 166 (WORD+TRIGRAM) a step, 32 and 53 of
    # them outside it, when each step assembled its own padded rows; 98 and 113, 11 and 20
    # outside, when the steps' rows were assembled from negatives read back to the host; now
    # 101 and 118, 14 and 25 outside (their offsets computed on the device, where the
    # negatives stay); 333 and 489 before the one-pass step
    assert per_step < 95 + 20 * len(components), (per_step, counted.most_common(10))
    assert outside < 16 * len(components), (outside, per_step)


@pytest.mark.parametrize("components", [("word",), ("word", "trigram"), ("lstm",), ("blstm",),
                                        ("gran",)])
def test_a_step_asks_the_device_nothing_back(monkeypatch, components):
    """What a CUDA graph can hold: the step (forward, loss, backward, clipping, Adam, the
    loss summed on the device) reads no value back to the host and makes no tensor whose
    size depends on the data; counted on the CPU, where the same operations dispatch.
    Recurrent models too, in passes (no packed sequences: they read their lengths on the
    host), with their scrambling."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    from paramill.embed.megabatch import scramble
    from paramill.embed.model import build
    from paramill.embed.graphstep import EagerStep
    from paramill.embed.train import adam

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[func.__name__.split(".")[0]] += 1
            return func(*args, **(kwargs or {}))

    model = build(ModelSpec(components=components, dim=8, units="word"),
                  [s for pair in PAIRS for s in pair]).train()
    step = EagerStep(model, adam(model, 1e-3), 0.4, 1.0, "cpu")
    feats = model.tensors(model.units([s for pair in PAIRS[:2] for s in pair] * 2))
    flat = _flat(feats)  # assembled outside the step (its rows' sizes are read here)
    with Count() as mode:
        if model.spec.recurrent:
            ids, lengths = feats["word"]
            passes = [{"word": (scramble(ids[k:k + 4], lengths[k:k + 4], 0.5), lengths[k:k + 4])}
                      for k in (0, 4)]
            step(passes, torch.tensor([4, 5, 6, 7, 0, 1, 2, 3]))
        else:
            step(feats)
            step(flat)
    syncing = {"_local_scalar_dense", "item", "nonzero", "masked_select", "unique_dim",
               "_unique2", "unique_consecutive", "equal", "is_nonzero", "_pack_padded_sequence"}
    assert mode.ops and not syncing & set(mode.ops), mode.ops
    assert step.total.item() > 0


@pytest.mark.parametrize("components", [("word",), ("word", "trigram")])
@pytest.mark.parametrize("bounded", [False, True])
def test_the_graph_step_trains_as_the_eager_step(tmp_path, monkeypatch, components, bounded):
    """The CUDA graph's bookkeeping, run on the CPU (where the "graph" is the same fixed-shape
    step, eagerly): flat inputs with room for the most ids a step has needed, which grows (a
    new recording each time), warm-up steps, short last batches eagerly, the loss summed in
    place; the same losses and weights as the eager step. ``bounded``: the steps sized as on
    CUDA, by a bound known on the host rather than read back (more zeros, the same sums)."""
    from paramill.embed import megabatch
    from paramill.embed import train as train_mod
    from paramill.embed.model import tail_bags
    from paramill.embed.graphstep import WARMUP_STEPS, GraphStep, room

    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    pairs = [(" ".join(words[: 2 + i % 11] + [str(i)]), " ".join(words[i % 5: 3 + i % 9] + [str(i)]))
             for i in range(90)]
    pairs += [(" ".join(words * 3) + " long", " ".join(words * 2) + " longer")]  # widths grow
    settings = EmbedTrainSettings(epochs=2, batch_size=8, megabatch=3, buffer_pairs=40,
                                  cuda_graph=True)
    spec = ModelSpec(components=components, dim=8, units="word")
    eager = train(pairs, tmp_path / "e.pt", spec, settings)
    steps = []
    stepper = train_mod._stepper

    def graph_on_cpu(model, optimizer, settings, spec, dev):
        steps.append(GraphStep(model, optimizer, settings.margin, settings.grad_clip, dev,
                               rows=4 * settings.batch_size, slots=settings.megabatch))
        return steps[-1]

    monkeypatch.setattr(train_mod, "_stepper", graph_on_cpu)
    monkeypatch.setattr(megabatch, "sizes_read_back", lambda dev: not bounded)
    graph = train(pairs, tmp_path / "g.pt", spec, settings)
    (step,) = steps
    assert step.warm == WARMUP_STEPS and step.replays >= 15 and step.eager >= 2
    assert step.captures >= 2  # the long pair's buffer needed more room
    assert all(n == room(n) and n >= 16 and ids.shape == weights.shape == (settings.megabatch, n)
               and offsets.shape == (settings.megabatch, 4 * settings.batch_size + tail_bags(n))
               and ids.dtype == offsets.dtype == torch.int32
               for ids, offsets, weights in step.static.values() for n in [ids.size(1)])
    assert [h["loss"] for h in graph["history"]] == pytest.approx(
        [h["loss"] for h in eager["history"]], rel=1e-6)
    a = torch.load(tmp_path / "e.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "g.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert stepper is not graph_on_cpu and not settings.replays("cpu", spec.recurrent)


def test_the_graph_step_takes_a_megabatch_at_once_and_each_step_from_its_slot(monkeypatch):
    """A mega-batch's runs go into the graph's inputs (its slab) once, three copies a unit,
    whatever its step count; each step then launches nothing outside the graph, which reads
    slot ``k`` at a counter on the device and moves it on, round the slab. The same weights,
    to the bit, as eager steps over the same runs (on the CPU the graph's step runs eagerly);
    a short step, not of the slab's shape, eagerly."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    from paramill.embed.buffer import Buffer
    from paramill.embed.graphstep import EagerStep, GraphStep, WARMUP_STEPS
    from paramill.embed.train import adam

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops, self.inside = Counter(), 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not self.inside:
                self.ops[func.__name__.split(".")[0]] += 1
            return func(*args, **(kwargs or {}))

    spec = ModelSpec(components=("word", "trigram"), dim=8, units="word")
    sentences = [s for pair in PAIRS for s in pair]
    torch.manual_seed(0)
    models = [build(spec, sentences).train() for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    units = sorted(models[0].vocabs)
    buffer = Buffer(pa.table({f"{u}_{side + 1}": [models[0].vocabs[u].ids(models[0].featurizers[u](p[side]))
                                                  for p in PAIRS]
                              for u in units for side in (0, 1)}), units)
    buffer.place("cpu")
    rows = np.random.default_rng(3).integers(0, 2 * buffer.n, 8 * 12)  # 12 steps of 2 pairs
    eager = EagerStep(models[0], adam(models[0], 1e-2), 0.4, 1.0, "cpu")
    graph = GraphStep(models[1], adam(models[1], 1e-2), 0.4, 1.0, "cpu", rows=8, slots=5)
    inside = GraphStep._slot_step
    seen = []

    def counted_slot(self):
        mode.inside += 1
        try:
            seen.append(int(self.at))  # (a read-back: the test's own, not counted)
            return inside(self)
        finally:
            mode.inside -= 1

    monkeypatch.setattr(GraphStep, "_slot_step", counted_slot)
    outside = []
    for block in (rows[:40], rows[40:56], rows[56:]):  # 5 steps, 2, then 5
        steps = len(block) // 8
        runs = buffer.flat_runs(block, graph.sizes(buffer.totals(block, steps)), steps)
        eager.over(runs, steps)
        with Count() as mode:
            graph.over(runs, steps)
        outside.append(mode.ops)
    short = buffer.flat_runs(rows[:4], None, 1)  # 1 pair: not the slab's shape
    eager.over(short, 1)
    graph.over(short, 1)
    assert seen == [0, 1, 2, 3, 4, 0, 1, 0, 1, 2, 3, 4]  # each block from its first slot
    assert graph.warm == WARMUP_STEPS and graph.replays == 12 - WARMUP_STEPS and graph.eager == 1
    for ops in outside:  # the same for 5 steps as for 2: a slot and a copy for each input
        assert ops == {"slice": 3 * len(units), "copy_": 3 * len(units), "zero_": 1}, ops
    a, b = models[0].state_dict(), models[1].state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a) and torch.equal(eager.total, graph.total)
    assert int(graph.at) == 0  # round the slab: 5 steps of 5 slots
    graph._slot_step()
    assert int(graph.at) == 1


def test_the_graphs_room_grows_in_eighths_of_a_doubling():
    from paramill.embed.graphstep import room

    assert [room(n) for n in (0, 1, 16, 17, 31, 33, 7400, 32768, 32769)] == [
        16, 16, 16, 18, 32, 36, 7680, 32768, 36864]
    for n in range(1, 5000, 7):
        assert n <= room(n) <= max(16, n * 1.125) and room(room(n)) == room(n)


def test_hardest_negative_is_the_most_similar_other_sentence():
    e1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    e2 = torch.tensor([[0.9, 0.1], [0.1, 0.9], [-1.0, 0.2]])
    n1, n2 = hardest_negatives(e1, e2)
    # pool = [e1_0, e1_1, e1_2, e2_0, e2_1, e2_2]; own pair excluded
    assert n1.tolist() == [2, 2, 3]
    assert n2.tolist() == [2, 2, 1]


def test_linked_pairs_sentences_are_left_out_of_the_negatives_unless_none_would_be_left():
    """Pairs (A, B) and (A, C) share A (tweets of one URL): with their links, neither takes
    a sentence of the other as its hardest negative; the papers' rule takes the copy of A."""
    v = {"A": [1.0, 0.0], "B": [0.8, 0.6], "C": [0.6, 0.8], "D": [0.0, 1.0], "E": [0.8, -0.6]}
    e1, e2 = (torch.tensor([v[s] for s in side]) for side in ("AAD", "BCE"))  # pool AADBCE
    keep = [t.tolist() for t in hardest_negatives(e1, e2)]
    skip = [t.tolist() for t in hardest_negatives(e1, e2, torch.tensor([0, 0, 1]))]
    assert keep[0] == [1, 0, 4] and keep[1][:2] == [4, 3]  # the copy of A; C for B, B for C
    assert skip[0] == [5, 5, 4] and skip[1][:2] == [2, 2]  # E and D: the other story
    assert keep[1][2] in (0, 1) and skip[1][2] in (0, 1)  # (D, E) is linked to no other pair
    one_story = [t.tolist() for t in hardest_negatives(e1, e2, torch.tensor([7, 7, 7]))]
    assert one_story == keep  # nothing left to choose from: the papers' rule


def test_row_keys_are_equal_exactly_for_the_same_ids_in_every_unit():
    from paramill.embed.features import row_keys

    flat = np.array([3, 4, 5, 3, 4, 5, 5, 4, 3, 7, 3, 4, 5, 0])
    offsets = np.array([0, 3, 6, 9, 10, 13, 14])  # rows 0, 1 and 4 the same; 2 their reverse
    keys = row_keys((flat, offsets))
    assert keys.dtype == np.int64 and len(keys) == 6
    assert keys[0] == keys[1] == keys[4] and len(set(keys.tolist())) == 4
    other = (np.array([1, 1, 1, 1, 2, 3]), np.arange(7))  # a second unit tells rows 1 and 4 apart
    both = row_keys((flat, offsets), other)
    assert both[0] == both[1] != both[4]
    assert len(set(row_keys((np.arange(100_000) % 977, np.arange(0, 100_001, 5))).tolist())) == 977
    assert row_keys((np.zeros(0, dtype=np.int64), np.array([0]))).shape == (0,)


def test_buffer_links_are_the_groups_of_pairs_joined_by_a_shared_sentence():
    from paramill.embed.buffer import Buffer

    sent = {c: [ord(c), 1] for c in "ABCDEFGH"}
    pairs = ["AB", "AC", "DE", "FE", "GH", "CA"]  # {0, 1, 5} share A (and C), {2, 3} share E
    buffer = Buffer(pa.table({f"word_{k + 1}": [sent[p[k]] for p in pairs] for k in (0, 1)}),
                    ["word"])
    links = buffer.links.tolist()
    assert links[0] == links[1] == links[5] and links[2] == links[3]
    assert len({links[0], links[2], links[4]}) == 3


@pytest.mark.parametrize("components, setting, skipped", [
    (("lstm",), "auto", True), (("gran",), "auto", True), (("word",), "auto", False),
    (("word",), "skip", True), (("lstm",), "keep", False)])
def test_training_leaves_linked_pairs_out_of_the_negatives_as_set(tmp_path, monkeypatch,
                                                                  components, setting, skipped):
    from paramill.embed import megabatch

    seen = []

    def recording(e1, e2, links=None):
        found = hardest_negatives(e1, e2, links)
        seen.append((None if links is None else links.tolist(), [t.tolist() for t in found]))
        return found

    monkeypatch.setattr(megabatch, "hardest_negatives", recording)
    texts = ["a cat sat", "the cat sat down", "dogs bark loudly", "a dog barks", "rain falls"]
    pairs = [(texts[i % 5], f"{texts[(i + 1) % 5]} {i}") for i in range(40)]  # 5 stories
    train(pairs, tmp_path / "m.pt", ModelSpec(components=components, dim=8, hidden=8, units="word"),
          EmbedTrainSettings(epochs=1, batch_size=10, megabatch=4, linked_negatives=setting))
    assert seen and all((links is not None) == skipped for links, _ in seen)
    for links, (n1, n2) in seen:
        if skipped:
            n = len(links)
            assert len(set(links)) == 5  # the s1 texts: one group each
            assert all(links[j % n] != links[i] for i in range(n) for j in (n1[i], n2[i]))


def test_read_pairs_from_candidates_tsv_and_s1s2(tmp_path):
    import polars as pl

    pl.DataFrame({"pair_id": ["a", "a", "b", "c"], "en_ref": ["x", "x", "y", "z"],
                  "candidate": ["x1", "x2", "y", "z1"], "rank": [1, 2, 1, 1]}).write_parquet(tmp_path / "c.parquet")
    (tmp_path / "p.tsv").write_text('he said "hi\tthey said hi\textra\n\tempty\n')
    pl.DataFrame({"s1": ["u"], "s2": ["v"]}).write_parquet(tmp_path / "s.parquet")
    pairs = read_pairs([tmp_path / "c.parquet", tmp_path / "p.tsv", tmp_path / "s.parquet"])
    assert pairs == [("x", "x1"), ("z", "z1"), ('he said "hi', "they said hi"), ("u", "v")]
    assert read_pairs([tmp_path / "c.parquet"], max_pairs=1) == [("x", "x1")]
    # the pairs the SentencePiece sample's share and the progress bars count: a candidate
    # table's rows at rank 1 (3 of 4 here), not every row
    assert PairSource.from_files([tmp_path / "c.parquet", tmp_path / "s.parquet"]).rows() == 4


def test_parquet_pairs_must_be_text_and_a_dictionary_of_strings_is(tmp_path):
    """Numbers or bytes in s1/s2 stop training with the file and column (they reached
    polars' string functions as a traceback); a categorical column is read as its text."""
    pq.write_table(pa.table({"s1": [1, 2], "s2": ["a", "b"]}), tmp_path / "n.parquet")
    with pytest.raises(InputError, match=r"n.parquet: column s1 holds int64, not text"):
        read_pairs([tmp_path / "n.parquet"])
    pq.write_table(pa.table({"en_ref": ["x"], "candidate": pa.array([b"y"])}), tmp_path / "b.parquet")
    with pytest.raises(InputError, match=r"b.parquet: column candidate holds binary, not text"):
        read_pairs([tmp_path / "b.parquet"])
    pq.write_table(pa.table({"s2": ["a"], "t": ["b"]}), tmp_path / "none.parquet")
    with pytest.raises(InputError, match=r"none.parquet: needs columns s1/s2 or en_ref/candidate"):
        read_pairs([tmp_path / "none.parquet"])
    pq.write_table(pa.table({"s1": pa.array(["u", "w"]).dictionary_encode(),
                             "s2": pa.array(["v", "u"]).dictionary_encode()}), tmp_path / "d.parquet")
    assert read_pairs([tmp_path / "d.parquet"]) == [("u", "v"), ("w", "u")]
    ranked = {"en_ref": ["x", "x", "z"], "candidate": ["y", "w", "v"]}  # a candidate table
    pq.write_table(pa.table({**ranked, "rank": ["1", "2", "1"]}), tmp_path / "r.parquet")
    for read in (lambda f: read_pairs([f]), lambda f: PairSource.from_files([f]).rows()):
        with pytest.raises(InputError, match=r"r.parquet: column rank holds string, not numbers"):
            read(tmp_path / "r.parquet")  # polars' string-to-number comparison as a traceback
    pq.write_table(pa.table({**ranked, "rank": [1.0, None, 1.0]}), tmp_path / "f.parquet")
    assert read_pairs([tmp_path / "f.parquet"]) == [("x", "y"), ("z", "v")]  # pandas' ints
    assert PairSource.from_files([tmp_path / "f.parquet"]).rows() == 2  # with a null: floats
    # a NUL is never text: the file and row (counted across row groups), as a TSV's line
    pq.write_table(pa.table({"s1": ["a", "b", "c\x00", "d"], "s2": ["e", "f", "g", "h"]}),
                   tmp_path / "z.parquet", row_group_size=2)
    with pytest.raises(InputError, match=r"z.parquet:3: column s1: NUL at character 1"):
        list(PairSource((str(tmp_path / "z.parquet"),), batch_rows=2))
    # nor is a sentence over a TSV line's 64 KiB (a TSV's is an error there too)
    pq.write_table(pa.table({"s1": ["a", "b", "c"], "s2": ["e", "é" * 40000, "h"]}),
                   tmp_path / "long.parquet", row_group_size=2)
    with pytest.raises(InputError, match=r"long.parquet:2: column s2: 80000 bytes, longer than 65536"):
        list(PairSource((str(tmp_path / "long.parquet"),), batch_rows=2))


PAIRS = [("The man reads a book.", "A man is reading a book."),
         ("The woman buys bread.", "The lady purchases bread."),
         ("Our neighbour sells an old car.", "Our neighbor is selling an old car."),
         ("The dog sleeps.", "The dog is sleeping."),
         ("It rains today.", "Today it is raining."),
         ("The chef cooks lunch.", "The cook makes lunch.")] * 5


def _flat(feats: dict, room: int = 7) -> dict:
    """``feats`` (padded ids and lengths) as training's flat input (``Buffer.flat_runs``, one
    run): the rows' ids one after another, ``room`` zeros after, offsets and the mean's
    weights."""
    from paramill.embed.model import tail_bags

    out = {}
    for unit, (ids, lengths) in feats.items():
        real = torch.arange(ids.size(1), device=ids.device)[None, :] < lengths[:, None]
        weights = (real.float() / lengths.clamp(min=1)[:, None].float())[real]
        count = tail_bags(int(lengths.sum()) + room)
        tails = lengths.sum() + torch.arange(count, device=ids.device) * room // count
        out[unit] = (torch.cat([ids[real], ids.new_zeros(room)]),
                     torch.cat([torch.cumsum(lengths, 0) - lengths, tails]),
                     torch.cat([weights, weights.new_zeros(room)]))
    return out


def test_training_lowers_the_loss(tmp_path):
    summary = train(PAIRS, tmp_path / "w.pt", ModelSpec(components=("word",), dim=16),
                    EmbedTrainSettings(epochs=6, batch_size=6, learning_rate=0.01))
    losses = [h["loss"] for h in summary["history"]]
    assert losses[-1] < 0.7 * losses[0]


def test_training_that_diverges_is_an_error_and_writes_no_model(tmp_path):
    """A learning rate of 1e300 made every weight NaN in the first epoch: the model was
    written, and STS and the filters read it. Now the epoch whose loss is not finite ends
    the job, writing nothing of it: the resume checkpoint there was is as it was."""
    spec = ModelSpec(components=("word",), dim=16)
    train(PAIRS, tmp_path / "w.pt", spec, EmbedTrainSettings(epochs=1, batch_size=6))
    kept = (tmp_path / "w.pt.resume.pt").read_bytes()
    for settings, said in ((EmbedTrainSettings(epochs=2, batch_size=6, learning_rate=1e300),
                            r"epoch 1 is nan \(embed\.train\.learning_rate 1e\+300, margin 0\.4\): lower "
                            r"the learning rate.* The model was not written$"),
                           (EmbedTrainSettings(epochs=1, batch_size=6, margin=1e308), r"epoch 1 is inf")):
        (tmp_path / "w.pt").unlink(missing_ok=True)
        with pytest.raises(ValueError, match=rf"training diverged: the mean loss of {said}"):
            train(PAIRS, tmp_path / "w.pt", spec, settings)
        assert not (tmp_path / "w.pt").exists()
    assert (tmp_path / "w.pt.resume.pt").read_bytes() == kept


@pytest.mark.parametrize("kind", ["lstm", "blstm", "gran"])
def test_recurrent_models_run_padded_to_what_packed_sequences_give(kind):
    """No packing (it needs the lengths on the host: a read-back on CUDA): the outputs and
    the gradients are those of torch's packed sequences, for empty, short and full rows, and
    a BLSTM's backward direction starts at each row's last real unit."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from paramill.embed.model import Recurrent, _masked_mean

    torch.manual_seed(0)
    model = Recurrent(kind, 40, 6, 6 if kind == "gran" else 5)
    lengths = torch.tensor([0, 1, 3, 7, 7, 2, 5])
    ids = torch.zeros(7, 9, dtype=torch.long)
    for row, length in enumerate(lengths.tolist()):
        ids[row, :length] = torch.randint(1, 40, (length,))

    def packed():
        x = model.embedding(ids)
        out, _ = model.lstm(pack_padded_sequence(x, lengths.clamp(min=1), batch_first=True,
                                                 enforce_sorted=False))
        h, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.size(1))
        if kind == "blstm":
            h = (h[..., :model.hidden] + h[..., model.hidden:]) / 2
        if kind == "gran":
            h = x * torch.sigmoid(model.gate_x(x) + model.gate_h(h))
        return _masked_mean(h, lengths)

    grads = []
    for run in (packed, lambda: model(ids, lengths)):
        model.zero_grad()
        out = run()
        out.pow(2).sum().backward()
        grads.append((out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (want, want_grads), (got, got_grads) = grads
    assert torch.allclose(got, want, atol=1e-6) and got.abs().sum() > 0
    assert all(torch.allclose(got_grads[n], want_grads[n], atol=1e-6) for n in want_grads)
    assert all(want_grads[n].abs().sum() > 0 for n in want_grads if "reverse" in n or kind != "blstm")


def test_a_recurrent_step_runs_rows_sorted_by_length_in_passes_of_their_own_width(tmp_path):
    """``Buffer.by_length``: passes of at most ``size`` rows, shortest first, each as wide as
    its longest row; ``back`` puts their outputs in the order the rows were asked in."""
    from paramill.embed.data import PairSource, epoch_buffers, write_ids
    from paramill.embed.model import build

    words_ = "alpha beta gamma delta epsilon zeta eta theta".split()
    pairs = [(" ".join(words_[:1 + i % 8]), " ".join(words_[:1 + (i * 3) % 8]) + " x") for i in range(20)]
    model = build(ModelSpec(units="word", components=("lstm",), dim=4, hidden=4),
                  [s for pair in pairs for s in pair])
    write_ids(model.vocabs, model.featurizers, PairSource.from_pairs(pairs), tmp_path / "ids")
    buffer, _ = next(epoch_buffers(tmp_path / "ids", ["word"], 0, 0, 100))
    buffer.place("cpu")
    rows = np.array([3, 25, 0, 7, 39, 12, 18])
    passes, back = buffer.by_length(rows, "word", 3, "cpu")
    assert [feats["word"][0].shape[0] for feats in passes] == [3, 3, 1]
    lengths = torch.cat([feats["word"][1] for feats in passes])
    assert lengths.tolist() == sorted(lengths.tolist())
    assert all(feats["word"][0].shape[1] == int(feats["word"][1].max()) for feats in passes)
    expected_ids, expected_lengths = buffer.tensors(rows)["word"]
    assert torch.equal(lengths[back], expected_lengths)
    width = expected_ids.shape[1]
    joined = torch.cat([torch.nn.functional.pad(ids, (0, width - ids.shape[1]))
                        for ids, _ in (feats["word"] for feats in passes)])
    assert torch.equal(joined[back], expected_ids)


@pytest.mark.parametrize("pass_rows", [3, 1000])
@pytest.mark.parametrize("scramble_rate", [0.0, 0.5])
def test_a_recurrent_step_trains_alike_whatever_its_passes(tmp_path, monkeypatch, pass_rows,
                                                           scramble_rate):
    """Passes (``recurrent_pass_rows``) are how a step is computed, not what: four passes of
    the batch size (the default), passes of 3 rows, or the whole step in one give the same
    losses and weights, scrambled or not (a step's scrambles are drawn for the step, not a
    pass at a time: until 2026-12-01 other passes scrambled other rows)."""
    from paramill.embed.buffer import Buffer

    passes = []
    by_length = Buffer.by_length
    monkeypatch.setattr(Buffer, "by_length",
                        lambda self, rows, unit, size, dev: passes.append(size) or by_length(
                            self, rows, unit, size, dev))
    spec = ModelSpec(components=("gran",), dim=8, units="word")
    settings = EmbedTrainSettings(epochs=2, batch_size=6, megabatch=2, scramble_rate=scramble_rate)
    default = train(PAIRS, tmp_path / "a.pt", spec, settings)
    assert set(passes) >= {6}  # the steps' passes: the batch size (the search's are 512)
    passes.clear()
    other = train(PAIRS, tmp_path / "b.pt", spec,
                  dataclasses.replace(settings, recurrent_pass_rows=pass_rows))
    assert pass_rows in passes and 6 not in passes
    assert [h["loss"] for h in other["history"]] == pytest.approx(
        [h["loss"] for h in default["history"]], rel=1e-5)
    a = torch.load(tmp_path / "a.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


@pytest.mark.parametrize("components", [("gran",), ("blstm",), ("word", "lstm")])
def test_the_recurrent_graph_step_trains_as_the_eager_step(tmp_path, monkeypatch, components):
    """``recurrent_cuda_graph``'s bookkeeping, run on the CPU (where a "graph" is the same
    fixed-shape step, eagerly): one pass a step, its ids copied into the inputs of the graph
    for its padded width (:func:`room`, zeros after the pass's own width), one graph a
    width met, at most ``MOST_GRAPHS`` (other widths eagerly), warm-up steps, a short last
    batch eagerly; the same losses and weights as the eager step over exact widths, within
    rounding (the padding adds time steps after every row's last)."""
    from paramill.embed import graphstep as steps_mod
    from paramill.embed import train as train_mod
    from paramill.embed.graphstep import WARMUP_STEPS, PassGraphStep, room

    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    pairs = [(" ".join(words[: 2 + i % 11] + [str(i)]), " ".join(words[i % 5: 3 + i % 9] + [str(i)]))
             for i in range(62)]
    spec = ModelSpec(components=components, dim=8, hidden=8, units="word")
    settings = EmbedTrainSettings(epochs=2, batch_size=6, megabatch=3, recurrent_pass_rows=24)
    eager = train(pairs, tmp_path / "e.pt", spec, settings)
    made, widths = [], []
    stepper, step_fn = train_mod._stepper, steps_mod.EagerStep._step

    def graph_on_cpu(model, optimizer, settings, spec, dev):
        made.append(PassGraphStep(model, optimizer, settings.margin, settings.grad_clip, dev,
                                  rows=4 * settings.batch_size))
        return made[-1]

    def seen(self, feats, order=None):
        widths.append([ids.size(1) for ids, _ in (p["word"] for p in feats)])
        return step_fn(self, feats, order)

    monkeypatch.setattr(train_mod, "_stepper", graph_on_cpu)
    monkeypatch.setattr(steps_mod.EagerStep, "_step", seen)
    graph = train(pairs, tmp_path / "g.pt", spec,
                  dataclasses.replace(settings, recurrent_cuda_graph=True))
    (step,) = made
    steps = 2 * -(-len(pairs) // settings.batch_size)
    assert graph["graph_recordings"] == step.captures and eager["graph_recordings"] == 0
    assert "cuda_peak_mb" not in graph  # on CUDA only
    assert step.warm == WARMUP_STEPS and step.eager == 2  # each epoch's short last batch
    assert step.replays == steps - WARMUP_STEPS - 2 and len(step.graphs) >= 2
    assert step.captures == sum(entry.replay is not None for entry in step.graphs.values())
    padded = [w[0] for w in widths if len(w) == 1]
    assert all(w == room(w, least=8) for w in padded)  # every full step at a graph's width
    assert sorted({w for w in padded}) == sorted(dict(key)["word"] for key in step.graphs)
    assert [h["loss"] for h in graph["history"]] == pytest.approx(
        [h["loss"] for h in eager["history"]], rel=1e-5)
    a = torch.load(tmp_path / "e.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "g.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)
    assert not dataclasses.replace(settings, recurrent_cuda_graph=True).replays("cpu", spec.recurrent)
    assert stepper is not graph_on_cpu


def test_a_recurrent_graph_run_resumes_as_it_would_have_gone_on(tmp_path, monkeypatch):
    """GRAN under ``recurrent_cuda_graph``'s bookkeeping on the CPU (one pass a step, inputs at
    the graphs' padded widths, warm-up steps, scrambles drawn for the step): two epochs, then a
    third from the checkpoint, with its graphs made again by the resumed run (warm-up steps
    included), gives the model of three epochs in one go; what the GPU case does on a card."""
    from paramill.embed import train as train_mod
    from paramill.embed.graphstep import WARMUP_STEPS, PassGraphStep

    made = []
    monkeypatch.setattr(train_mod, "_stepper", lambda model, optimizer, settings, spec, dev: made.append(
        PassGraphStep(model, optimizer, settings.margin, settings.grad_clip, dev,
                      rows=4 * settings.batch_size)) or made[-1])
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    pairs = [(" ".join(words[: 2 + i % 11] + [str(i)]), " ".join(words[i % 5: 3 + i % 9] + [str(i)]))
             for i in range(48)]
    spec = ModelSpec(components=("gran",), dim=8, hidden=8, units="word")
    settings = dict(batch_size=6, megabatch=2, recurrent_pass_rows=24, recurrent_cuda_graph=True,
                    scramble_rate=0.5)
    whole = train(pairs, tmp_path / "a.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    train(pairs, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=2, **settings))
    resumed = train(pairs, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    assert len(made) == 3 and made[2].warm == WARMUP_STEPS and made[2].replays == 8 - WARMUP_STEPS
    assert made[0].replays == 3 * 8 - WARMUP_STEPS and made[2].captures >= 1
    assert [h["epoch"] for h in resumed["history"]] == [1, 2, 3]
    assert [h["loss"] for h in resumed["history"]] == pytest.approx(
        [h["loss"] for h in whole["history"]], rel=1e-6)
    a = torch.load(tmp_path / "a.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_the_recurrent_graph_steps_graphs_are_bounded_and_need_one_pass(tmp_path, monkeypatch):
    """Past ``MOST_GRAPHS`` widths a step runs eagerly; passes of fewer rows than a step are
    refused before training (a graph replays one pass a step)."""
    from paramill.embed import graphstep as steps_mod
    from paramill.embed import train as train_mod
    from paramill.embed.graphstep import PassGraphStep

    made = []
    monkeypatch.setattr(steps_mod, "MOST_GRAPHS", 1)
    monkeypatch.setattr(train_mod, "_stepper", lambda model, optimizer, settings, spec, dev: made.append(
        PassGraphStep(model, optimizer, settings.margin, settings.grad_clip, dev,
                      rows=4 * settings.batch_size)) or made[-1])
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    pairs = [(" ".join(words[: 1 + i % 12] + words * (i % 7 == 0) * 3), " ".join(words[i % 5:]))
             for i in range(40)]
    settings = EmbedTrainSettings(epochs=1, batch_size=4, megabatch=2, recurrent_pass_rows=16,
                                  recurrent_cuda_graph=True)
    train(pairs, tmp_path / "m.pt", ModelSpec(components=("gran",), dim=4, hidden=4, units="word"),
          settings)
    (step,) = made
    assert len(step.graphs) == 1 and step.eager >= 1 and step.replays + step.warm + step.eager == 10
    with pytest.raises(ValueError, match=r"recurrent_pass_rows to at least 4 x batch_size \(16\), not 8"):
        dataclasses.replace(settings, recurrent_pass_rows=8)


def test_a_recurrent_pass_is_one_a_step_by_default_only_where_the_step_is_replayed():
    """``recurrent_pass_rows`` 0: one pass a step (4 x batch_size) where the step is replayed
    from CUDA graphs (``recurrent_cuda_graph`` on CUDA), else a batch's rows (four passes, the
    CPU's cheaper way, and CUDA's eager one); a number given is kept; the config check and the
    settings accept 0 with the graph and refuse a given pass shorter than a step."""
    from paramill.config import schema
    from paramill.config.checks import cross_field_problems as check

    graph = EmbedTrainSettings(batch_size=100, recurrent_cuda_graph=True)
    assert graph.pass_rows("cuda") == 400 and graph.pass_rows("cpu") == 100
    assert EmbedTrainSettings(batch_size=100).pass_rows("cuda") == 100
    assert dataclasses.replace(graph, recurrent_pass_rows=800).pass_rows("cpu") == 800
    # which steps are replayed: each kind of model by its own setting, on CUDA only
    assert [graph.replays(d, r) for d in ("cuda", "cpu") for r in (True, False)] == [True, True, False, False]
    eager = EmbedTrainSettings(cuda_graph=False, recurrent_cuda_graph=True, recurrent_pass_rows=0)
    assert [eager.replays("cuda", r) for r in (True, False)] == [True, False]
    root = schema()
    assert not [p for p in check({"embed": {"train": {"recurrent_cuda_graph": True}}}, root)
                if "recurrent" in p]
    assert [p for p in check({"embed": {"train": {"recurrent_cuda_graph": True,
                                                  "recurrent_pass_rows": 200}}}, root) if "recurrent" in p]


def test_a_checkpoint_from_before_a_setting_existed_resumes_with_its_default(tmp_path):
    """A setting added since a checkpoint was written (``recurrent_pass_rows``) counts as its
    default there: the run resumes rather than starting afresh; another value starts afresh."""
    spec = ModelSpec(components=("gran",), dim=8, units="word")
    settings = EmbedTrainSettings(epochs=1, batch_size=6, megabatch=2)
    train(PAIRS, tmp_path / "m.pt", spec, settings)
    state = torch.load(tmp_path / "m.pt", weights_only=False)
    del state["train"]["recurrent_pass_rows"]
    torch.save(state, tmp_path / "m.pt")
    resumed = train(PAIRS, tmp_path / "m.pt", spec, dataclasses.replace(settings, epochs=2))
    assert [h["epoch"] for h in resumed["history"]] == [1, 2] and len(resumed["epoch_seconds"]) == 1
    afresh = train(PAIRS, tmp_path / "m.pt", spec,
                   dataclasses.replace(settings, epochs=2, recurrent_pass_rows=24))
    assert [h["epoch"] for h in afresh["history"]] == [1, 2] and len(afresh["epoch_seconds"]) == 2


def test_training_resumes_exactly(tmp_path):
    spec = ModelSpec(components=("word", "lstm"), dim=8, hidden=8)
    train(PAIRS, tmp_path / "a.pt", spec, EmbedTrainSettings(epochs=3, batch_size=6, megabatch=2))
    train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=2, batch_size=6, megabatch=2))
    # the kept checkpoint is the model file under a second name, not a second copy
    model, kept = tmp_path / "b.pt", tmp_path / "b.pt.resume.pt"
    assert kept.stat().st_ino == model.stat().st_ino and model.stat().st_nlink == 2
    model.unlink()  # as Snakemake removes a job's output before it runs the job again
    resumed = train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, batch_size=6, megabatch=2))
    assert [h["epoch"] for h in resumed["history"]] == [1, 2, 3]
    # the epochs this run trained, timed one by one (the rate is theirs, not the checkpoint's)
    (seconds,) = resumed["epoch_seconds"]
    assert seconds > 0 and resumed["epoch_pairs_per_second"] == pytest.approx(
        resumed["pairs"] / seconds, rel=0.01)
    a = torch.load(tmp_path / "a.pt", weights_only=True)
    b = torch.load(tmp_path / "b.pt", weights_only=True)
    assert a["epoch"] == b["epoch"] == 3 and "optimizer" in b and b["vocabs"] == a["vocabs"]
    for key in a["state_dict"]:
        assert torch.allclose(a["state_dict"][key], b["state_dict"][key], atol=1e-6), key
    record = json.loads((tmp_path / "b.pt.prov.json").read_text())
    assert record["training"]["epochs"] == 3


def test_load_model_encodes_and_the_cli_embeds(tmp_path):
    train(PAIRS, tmp_path / "m.pt", ModelSpec(components=("word",), dim=16), EmbedTrainSettings(epochs=8, batch_size=6))
    model = load_model(tmp_path / "m.pt")
    assert isinstance(model, SentenceEncoder)
    vecs = model.encode(["The dog sleeps.", "The dog is sleeping.", "The chef cooks lunch."])
    assert vecs.shape == (3, 16) and vecs.dtype == np.float32
    (tmp_path / "in.txt").write_text("The dog sleeps.\nThe chef cooks lunch.\n")
    assert main(["embed", "encode", "--model", str(tmp_path / "m.pt"), "--input",
                 str(tmp_path / "in.txt"), "--out", str(tmp_path / "v.npy")]) == 0
    saved = np.load(tmp_path / "v.npy")
    assert np.allclose(saved, vecs[[0, 2]], atol=1e-6)


def test_encoding_a_file_a_block_at_a_time_gives_the_vectors_of_the_whole(tmp_path):
    """`embed encode` reads its file a block of lines at a time into a memory-mapped .npy
    (it held every sentence and two copies of the matrix): the rows are the lines' vectors,
    in order, whatever the block; a line that is not UTF-8 names the file and line, and no
    .npy is left."""
    from paramill.embed.encoding import encode_file

    train(PAIRS, tmp_path / "m.pt", ModelSpec(components=("word",), dim=16), EmbedTrainSettings(epochs=2, batch_size=6))
    lines = [a for a, _ in PAIRS] + ["", "an unseen word: zyzzyva"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    whole = load_model(tmp_path / "m.pt").encode(lines)
    rows, dim, halved = encode_file(tmp_path / "m.pt", tmp_path / "in.txt", tmp_path / "v.npy", batch_size=3, block=4)
    assert (rows, dim, halved) == (len(lines), 16, [])
    assert np.allclose(np.load(tmp_path / "v.npy"), whole, atol=1e-6)
    (tmp_path / "blank.txt").write_text("\n")
    assert encode_file(tmp_path / "m.pt", tmp_path / "blank.txt", tmp_path / "e.npy")[0] == 1
    assert np.load(tmp_path / "e.npy").shape == (1, 16)
    (tmp_path / "bad.txt").write_bytes(b"The dog sleeps.\nA \xff cat.\n")
    with pytest.raises(InputError, match=r"bad\.txt:2: "):
        encode_file(tmp_path / "m.pt", tmp_path / "bad.txt", tmp_path / "b.npy")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b")) == ["bad.txt", "blank.txt"]


def test_a_batch_out_of_gpu_memory_is_encoded_again_at_half_the_size(tmp_path, monkeypatch, capsys):
    """A batch that does not fit in the GPU's memory (torch's OutOfMemoryError, here raised
    for batches over 2 sentences) is encoded again at half its size, and the rest at that
    size: the same vectors, each halving in the log and in ``out_of_gpu_memory``."""
    train(PAIRS, tmp_path / "m.pt", ModelSpec(components=("word",), dim=16), EmbedTrainSettings(epochs=2, batch_size=6))
    model = load_model(tmp_path / "m.pt", "cpu")
    sentences = [a for a, _ in PAIRS][:7]
    expected = model.encode(sentences, batch_size=2)
    sizes = []
    forward = SentenceEncoder.forward

    def small_card(self, feats):
        (ids, _), *_ = feats.values()
        sizes.append(len(ids))
        if len(ids) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(self, feats)

    monkeypatch.setattr(SentenceEncoder, "forward", small_card)
    got = model.encode(sentences, batch_size=8, command="embed encode")
    assert np.allclose(got, expected, atol=1e-6) and got.shape == (7, 16)
    assert sizes == [7, 4, 2, 2, 2, 1]  # at 8 (the 7 there are), at 4, then 2 a batch to the end
    assert model.out_of_gpu_memory == [{"at": "sentence 1", "batch_size": 8, "now": 4},
                                       {"at": "sentence 1", "batch_size": 4, "now": 2}]
    assert "embed encode: sentence 1: out of GPU memory at batch_size 8; the rest goes on at 4" in capsys.readouterr().err
    # evaluate sts: the halvings in its provenance (its batches of 256 here over 7 > 2 sentences)
    from paramill.evaluate.sts import evaluate

    (tmp_path / "sts.tsv").write_text("".join(f"{k % 5}.0\t{a}\t{b}\n" for k, (a, b) in enumerate(PAIRS[:7])))
    result = evaluate(tmp_path / "m.pt", [{"name": "t", "year": "y", "format": "tsv", "path": str(tmp_path / "sts.tsv")}],
                      tmp_path / "sts-out.tsv", tmp_path / "sts-out.json")
    record = json.loads((tmp_path / "sts-out.json.prov.json").read_text())
    assert result["datasets"][0]["n"] == 7 and result["datasets"][0]["pearson"] is not None
    assert [h["batch_size"] for h in record["out_of_gpu_memory"]] == [256, 128, 64, 32, 16, 8, 4]
    sizes.clear()
    monkeypatch.setattr(SentenceEncoder, "forward", lambda self, feats: small_card(self, {"x": ([0] * 3, 0)}))
    with pytest.raises(torch.cuda.OutOfMemoryError):  # at 1 the error stands
        model.encode(sentences, batch_size=2)
    assert sizes == [3, 3]


def test_glove_initialisation(tmp_path):
    (tmp_path / "g.txt").write_text("dog 1 2 3\nzzz 9 9 9\nthe 0.5 0.5 0.5\n")
    model = build(ModelSpec(units="word", components=("word",), dim=3, word_vectors=str(tmp_path / "g.txt")), SENTS)
    emb = model.parts[0].embedding.weight
    assert emb[model.vocabs["word"].index["dog"]].tolist() == [1, 2, 3]
    (tmp_path / "bad.txt").write_text("dog 1 2\n")
    with pytest.raises(InputError, match="bad.txt:1: vector of 2 values"):
        build(ModelSpec(units="word", components=("word",), dim=3, word_vectors=str(tmp_path / "bad.txt")), SENTS)
    (tmp_path / "bad.txt").write_bytes(b"zzz 1 2\ndog 1 2 nan\n")  # a word not in the vocabulary is not parsed
    with pytest.raises(InputError, match="bad.txt:2: value 'nan' is not a finite decimal"):
        build(ModelSpec(units="word", components=("word",), dim=3, word_vectors=str(tmp_path / "bad.txt")), SENTS)
    (tmp_path / "bad.txt").write_bytes(b"dog 1 2 3\nthe \xff 1 2\n")
    with pytest.raises(InputError, match="bad.txt:2: invalid UTF-8"):
        build(ModelSpec(units="word", components=("word",), dim=3, word_vectors=str(tmp_path / "bad.txt")), SENTS)
    with pytest.raises(ValueError, match="word_vectors initialise word units"):
        ModelSpec(components=("word",), dim=3, word_vectors=str(tmp_path / "g.txt"))  # units sp


def test_sweep_points_cross_the_given_axes_in_a_fixed_order():
    from paramill.embed.sweep import model_settings, sweep_points

    embed = {"model": {"components": ["word"], "dim": 16}, "train": {"megabatch": 1, "epochs": 1},
             "release": "default", "models": {"word": {"components": ["word"]}},
             "sweep": {"pairs": 100, "grid": {"release": ["default", "top-half"],
                                              "components": [["word"], ["lstm"]], "megabatch": []}}}
    points = sweep_points(embed)
    assert list(points) == ["sweep-00", "sweep-01", "sweep-02", "sweep-03"]
    # components vary slowest (AXES order), whatever the order of the grid's keys
    assert [p["point"] for p in points.values()] == [
        {"components": ["word"], "release": "default"}, {"components": ["word"], "release": "top-half"},
        {"components": ["lstm"], "release": "default"}, {"components": ["lstm"], "release": "top-half"}]
    assert points["sweep-02"]["spec"] == {"components": ["lstm"], "dim": 16}
    assert points["sweep-03"]["train"] == {"megabatch": 1, "epochs": 1, "max_pairs": 100}
    assert model_settings(embed, "sweep-01")[2] == "top-half"
    assert model_settings(embed, "word") == ({"components": ["word"], "dim": 16}, embed["train"], "default")
    with pytest.raises(ValueError, match="no embedding model 'nope'"):
        model_settings(embed, "nope")


def test_sweep_varies_units_and_the_sentencepiece_vocabulary():
    from paramill.embed.sweep import sweep_points

    embed = {"model": {"components": ["word"], "units": "word"}, "train": {}, "release": "default",
             "models": {}, "sweep": {"pairs": 0, "grid": {"units": ["word", "sp"],
                                                          "sp_vocab_size": [8000, 50000]}}}
    specs = [p["spec"] for p in sweep_points(embed).values()]
    assert specs == [{"components": ["word"], "units": u, "sp_vocab_size": v}
                     for u in ("word", "sp") for v in (8000, 50000)]


# -- streamed training data ---------------------------------------------------------------

def test_a_damaged_page_of_the_id_store_names_its_part_and_how_to_rebuild(tmp_path):
    """The id store outlives its run (resume, more epochs): a bit flipped in a part's page
    trained on other ids without a word; its pages carry checksums, verified as it is read."""
    from paramill.embed.data import PairSource, epoch_buffers, write_ids
    from paramill.embed.model import build
    from tests.unit.test_bad_input import flip_in_page

    model = build(ModelSpec(units="word", components=("word",), dim=4), [s for p in PAIRS for s in p])
    write_ids(model.vocabs, model.featurizers, PairSource.from_pairs(PAIRS), tmp_path / "ids")
    assert sum(b.n for b, _ in epoch_buffers(tmp_path / "ids", ["word"], 0, 0, 100)) == len(PAIRS)
    part = tmp_path / "ids" / "parts" / "part-000000.parquet"
    flip_in_page(part, column=0, back=3)
    with pytest.raises(InputError, match=rf"{part}: an id store's part that cannot be read \(could not "
                                         rf"verify page integrity.*\); remove {tmp_path / 'ids'} and train"):
        list(epoch_buffers(tmp_path / "ids", ["word"], 0, 0, 100))


def test_id_store_buffers_cover_every_pair_once_and_pad_like_the_encoder(tmp_path):
    from paramill.embed.data import PairSource, count_units, epoch_buffers, write_ids
    from paramill.embed.buffer import SPARE_IDS
    from paramill.embed.model import TAIL_SPAN, build_from_counts, featurizers, tail_bags

    spec = ModelSpec(units="word", components=("word", "trigram"), dim=4)
    pairs = [(f"{a} number {i}", f"{b} {i}") for i, (a, b) in enumerate(PAIRS)]
    source = PairSource.from_pairs(pairs, batch_rows=7)
    counts, n = count_units(featurizers(spec), source)
    model = build_from_counts(spec, counts)
    assert n == 30
    assert write_ids(model.vocabs, model.featurizers, source, tmp_path / "ids", chunk_pairs=4,
                     key={"k": ("a", 1)}) == 30
    parts = sorted((tmp_path / "ids" / "parts").iterdir())
    assert [p.name for p in parts] == [f"part-{k:06d}.parquet" for k in range(5)]  # a chunk each
    assert [pq.ParquetFile(p).metadata.num_rows for p in parts] == [7, 7, 7, 7, 2]
    assert [pq.ParquetFile(p).metadata.num_row_groups for p in parts] == [2, 2, 2, 2, 1]  # 4 + 3
    stamp = [p.stat().st_mtime_ns for p in parts]
    assert write_ids(model.vocabs, model.featurizers, source, tmp_path / "ids", chunk_pairs=4,
                     key={"k": ("a", 1)}) == 30  # reused
    assert [p.stat().st_mtime_ns for p in parts] == stamp
    assert write_ids(model.vocabs, model.featurizers, source, tmp_path / "ids", chunk_pairs=4,
                     key={"k": ("b", 1)}) == 30  # another key: written again
    assert [p.stat().st_mtime_ns for p in parts] != stamp
    seen = []
    for buffer, order in epoch_buffers(tmp_path / "ids", ["trigram", "word"], seed=3, epoch=0,
                                       buffer_pairs=8):
        assert buffer.n <= 8 and sorted(order.tolist()) == list(range(buffer.n))
        got = buffer.tensors(np.concatenate([order, buffer.n + order]))
        # the word ids of each row are what the encoder computes for some training sentence
        for row in got["word"][0][:buffer.n].tolist():
            seen.append(tuple(i for i in row if i))
    expected = [tuple(model.vocabs["word"].ids(model.featurizers["word"](a))) for a, _ in pairs]
    assert sorted(seen) == sorted(expected)
    again = [o.tolist() for _, o in epoch_buffers(tmp_path / "ids", ["word"], 3, 0, 8)]
    other = [o.tolist() for _, o in epoch_buffers(tmp_path / "ids", ["word"], 3, 1, 8)]
    first = [o.tolist() for _, o in epoch_buffers(tmp_path / "ids", ["word"], 3, 0, 8)]
    assert again == first and again != other
    # padded tensors equal the encoder's own for the same sentences
    buffer, _ = next(epoch_buffers(tmp_path / "ids", ["trigram", "word"], 0, 0, 100))
    assert buffer.n == 30  # one buffer holds every row group, in file order
    rows = np.array([0, 3, buffer.n + 5])
    ours = buffer.tensors(rows)
    sentences = [pairs[0][0], pairs[3][0], pairs[5][1]]
    theirs = model.tensors(model.units(sentences))
    for unit in ("word", "trigram"):
        assert torch.equal(ours[unit][0], theirs[unit][0]) and torch.equal(ours[unit][1], theirs[unit][1])
    # assembled on the device from ids placed there once: the same ids and lengths, padded to
    # the widths asked for
    buffer.place("cpu")
    widths = buffer.widths(rows)
    assert widths == {u: ours[u][0].shape[1] for u in ("word", "trigram")}
    wide = {u: w + 3 for u, w in widths.items()}
    placed = buffer.batch(torch.from_numpy(rows), wide)
    for unit in ("word", "trigram"):
        ids, lengths = placed[unit]
        assert ids.shape == (3, wide[unit]) and torch.equal(lengths, ours[unit][1])
        assert torch.equal(ids[:, :widths[unit]], ours[unit][0]) and not ids[:, widths[unit]:].any()
    # flat runs (a mega-batch's steps): each run's rows one after another, no padding between
    # them, zeros after; offsets and the mean's weights; the model gives the padded vectors
    runs = np.array([0, 3, buffer.n + 5, 7, 7, buffer.n + 29])
    totals = buffer.totals(runs, 2)
    lengths = {u: (buffer.offsets[u][runs + 1] - buffer.offsets[u][runs]).reshape(2, 3)
               for u in ("word", "trigram")}
    assert totals == {u: int(lengths[u].sum(1).max()) for u in ("word", "trigram")}
    room = {u: n + 5 for u, n in totals.items()}
    flat = buffer.flat_runs(runs, room, 2)
    padded = buffer.tensors(runs)
    for unit in ("word", "trigram"):
        ids, offsets, weights = flat[unit]
        assert ids.shape == weights.shape == (2, room[unit]) and offsets.shape == (2, 3 + tail_bags(room[unit]))
        for k in range(2):
            rows = [r[r != 0] for r in padded[unit][0][3 * k:3 * k + 3]]
            real = int(lengths[unit][k].sum())
            assert torch.equal(ids[k, :real], torch.cat(rows))
            # the padding: the buffer's largest ids counting down (not id 0), weight 0
            top = int(buffer.flat[unit].max())
            places = torch.arange(k * room[unit] + real, (k + 1) * room[unit])
            assert torch.equal(ids[k, real:], top - places % min(top, SPARE_IDS))
            assert offsets[k, :3].tolist() == [0, len(rows[0]), len(rows[0]) + len(rows[1])]
            # the zeros after the rows in bags of their own, none longer than an even share
            tail = torch.cat([offsets[k, 3:], torch.tensor([room[unit]])]).diff()
            assert offsets[k, 3] == real and tail.min() >= 0 and tail.sum() == room[unit] - real
            assert tail.max() <= min(TAIL_SPAN, -(-(room[unit] - real) // tail_bags(room[unit])))
            assert torch.equal(weights[k, :real], torch.cat([torch.full((len(r),), 1 / len(r))
                                                             for r in rows]))
            assert not weights[k, real:].any()
    by_run = torch.cat([model({u: tuple(part[k] for part in flat[u]) for u in flat}) for k in (0, 1)])
    assert torch.allclose(by_run, model(padded), atol=1e-6)


def test_flat_runs_place_rows_without_ids_and_pad_the_rest():
    """Sentences with no ids (empty, or every unit unknown to a store) take no place in a
    run; each run is its rows' ids one after another, then padding (spare ids, weight 0);
    the mean's weights are 1/length at each row's ids; a run of only empty rows is all
    padding."""
    from paramill.embed.buffer import Buffer
    from paramill.embed.model import TAIL_SPAN, Averaging, tail_bags

    sentences = [[5, 6], [], [7], [], [8, 9, 10], []]
    buffer = Buffer(pa.table({"u_1": pa.array(sentences[:3], pa.list_(pa.int32())),
                              "u_2": pa.array(sentences[3:], pa.list_(pa.int32()))}), ["u"])
    buffer.place("cpu")
    runs = np.array([1, 0, 3, 2, 1, 4, 3, 5, 1])  # three runs of three rows
    ids, offsets, weights = buffer.flat_runs(runs, {"u": 6}, 3)["u"]
    # padding: the buffer's largest ids (10 down to 1 here, as it holds 10) in turn
    assert ids.tolist() == [[5, 6, 8, 7, 6, 5], [7, 8, 9, 10, 10, 9], [8, 7, 6, 5, 4, 3]]
    assert offsets[:, :3].tolist() == [[0, 0, 2], [0, 1, 1], [0, 0, 0]]
    assert torch.equal(weights, torch.tensor([[0.5, 0.5, 0, 0, 0, 0], [1] + [1 / 3] * 3 + [0, 0],
                                              [0] * 6]))
    # no rows at all: a run of zeros, not an error
    ids, offsets, weights = buffer.flat_runs(np.array([], dtype=np.int64), {"u": 4}, 1)["u"]
    assert ids.tolist() == [[10, 9, 8, 7]] and not weights.any() and offsets.shape == (1, tail_bags(4))
    # a room far above the rows' ids (CUDA's bound): the zeros in bags of at most TAIL_SPAN,
    # more bags as the room grows, and the rows' sums unchanged
    buffer_runs = np.array([0, 2, 4])
    exact = buffer.flat_runs(buffer_runs, None, 1)["u"]
    wide = buffer.flat_runs(buffer_runs, {"u": 5000}, 1)["u"]
    assert wide[1].shape == (1, 3 + tail_bags(5000)) and tail_bags(5000) == -(-5000 // TAIL_SPAN)
    # ids and offsets in 32 bits (CUDA's backward sorts them over their whole width)
    assert wide[0].dtype == wide[1].dtype == exact[0].dtype == exact[1].dtype == torch.int32
    bags = torch.cat([wide[1][0, 3:], torch.tensor([5000])]).diff()
    assert bags.sum() == 5000 - 6 and 0 <= bags.min() and bags.max() <= TAIL_SPAN
    # ... and of ids that no place holds more than its share of: the buffer's 10 in turn
    counts = torch.bincount(wide[0][0, 6:])
    assert counts[0] == 0 and counts.sum() == 4994
    assert counts[1:].max() - counts[1:].min() <= 1 and not wide[2][0, 6:].any()
    # the padding changes neither the rows' sums nor any gradient
    layer = Averaging(11, 4)
    grads = []
    for run in (exact, wide):
        layer.zero_grad()
        out = layer(*(part[0] for part in run))
        (out * torch.arange(12.0).view(3, 4)).sum().backward()
        grads.append((out.detach(), layer.embedding.weight.grad.clone()))
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])
    # random rows, a third of them empty, against the runs built one row at a time
    rng = np.random.default_rng(3)
    sentences = [rng.integers(1, 99, int(rng.choice([0, 1, 4, 30]))).tolist() for _ in range(60)]
    buffer = Buffer(pa.table({"u_1": pa.array(sentences[:30], pa.list_(pa.int32())),
                              "u_2": pa.array(sentences[30:], pa.list_(pa.int32()))}), ["u"])
    buffer.place("cpu")
    runs = rng.integers(0, 60, 4 * 25)
    ids, offsets, weights = buffer.flat_runs(runs, None, 4)["u"]
    for k in range(4):
        rows = [sentences[r] for r in runs[25 * k:25 * (k + 1)]]
        flat = [i for row in rows for i in row]
        assert ids[k, :len(flat)].tolist() == flat and (ids[k, len(flat):] >= 1).all()
        assert weights[k].tolist() == pytest.approx(
            [1 / len(row) for row in rows for _ in row] + [0] * (ids.shape[1] - len(flat)))
        assert offsets[k, :25].tolist() == np.cumsum([0] + [len(r) for r in rows[:-1]]).tolist()


def test_a_megabatchs_steps_hold_its_pairs_and_negatives_at_either_size(monkeypatch):
    """An averaging model's steps over a mega-batch (three full steps of 5 pairs, a short one
    of 2): each step's run is s1, s2 and their two negatives' ids one after another, then
    zeros. Sized exactly (read back, the CPU) or by the host's bound (CUDA: nothing read
    back), the same ids, offsets and weights; the bound holds every step, and a sentence that
    is every pair's negative, the pool's longest, fills it to the last place."""
    from paramill.embed import megabatch
    from paramill.embed.buffer import Buffer
    from paramill.embed.graphstep import group

    rng = np.random.default_rng(5)
    n = 23
    sentences = [rng.integers(1, 99, int(rng.choice([0, 1, 3, 12]))).tolist() for _ in range(2 * n)]
    buffer = Buffer(pa.table({"u_1": pa.array(sentences[:n], pa.list_(pa.int32())),
                              "u_2": pa.array(sentences[n:], pa.list_(pa.int32()))}), ["u"])
    buffer.place("cpu")
    idx = rng.permutation(n)[:17]
    pool = np.concatenate([idx, n + idx])
    longest = int(np.argmax([len(sentences[r]) for r in pool]))

    class Room:  # the step's room: what it is asked for (an eager step's)
        asked = []

        def sizes(self, needed):
            self.asked.append(needed)
            return needed

    for negs in (torch.from_numpy(rng.integers(0, 34, (2, 17))), torch.full((2, 17), longest)):
        made = {}
        for exact in (True, False):
            monkeypatch.setattr(megabatch, "sizes_read_back", lambda dev: exact)
            blocks = list(megabatch.averaging_steps(buffer, idx, pool, negs, 5, Room()))
            assert [count for _, count in blocks] == [3, 1]  # the full steps, then the short one
            made[exact] = [group(runs, k)["u"] for runs, count in blocks for k in range(count)]
        assert len(made[True]) == len(made[False]) == 4
        reals = []
        for k, ((ids, offsets, weights), (bids, boffsets, bweights)) in enumerate(zip(*made.values())):
            sl = slice(5 * k, 5 * k + 5)
            rows = [*idx[sl], *(n + idx[sl]), *pool[negs[0, sl].numpy()], *pool[negs[1, sl].numpy()]]
            flat = [i for r in rows for i in sentences[r]]
            real = len(flat)
            reals.append(real)
            assert ids[:real].tolist() == flat and len(ids) >= real
            assert bids[:real].tolist() == flat and len(bids) >= real
            assert not weights[real:].any() and not bweights[real:].any()
            assert offsets[:len(rows)].tolist() == boffsets[:len(rows)].tolist() == np.cumsum(
                [0] + [len(sentences[r]) for r in rows[:-1]]).tolist()
            assert torch.equal(weights[:real], bweights[:real]) and not bweights[real:].any()
        # the full steps' room, asked of the step once: their most, or the bound
        full = {True: max(1, max(reals[:3])), False: megabatch.bound(buffer, idx[:15], pool, 3)["u"]}
        assert [a["u"] for a in Room.asked[-2:]] == [full[True], full[False]]
        assert [len(made[True][k][0]) for k in range(3)] == [full[True]] * 3
        assert (full[False] == full[True]) == bool((negs == longest).all())
    assert megabatch.bound(buffer, idx[:0], pool[:0], 1) == {"u": 1}
    with pytest.raises(ValueError, match="a pool of 34 rows for 15 pairs"):
        next(megabatch.averaging_steps(buffer, idx[:15], pool, negs, 5, Room()))


def test_the_progress_bars_loss_is_the_running_mean_and_none_before_a_step():
    from paramill.embed.megabatch import LossPeek

    total = torch.tensor(6.0)
    peek = LossPeek(total)
    assert peek(0) is None and peek(3) == 2.0
    total += 2
    assert peek(4) == 2.0


def test_scramble_shuffles_real_positions_only():
    from paramill.embed.megabatch import scramble

    torch.manual_seed(0)
    ids = torch.tensor([[5, 6, 7, 8, 0, 0], [1, 2, 0, 0, 0, 0], [9, 10, 11, 12, 13, 14]])
    lengths = (ids != 0).sum(1)
    out = scramble(ids, lengths, rate=1.0)
    for a, b in zip(ids.tolist(), out.tolist()):
        assert sorted(a) == sorted(b) and [x == 0 for x in a] == [x == 0 for x in b]
    assert not torch.equal(out, ids)
    assert torch.equal(scramble(ids, lengths, rate=0.0), ids)
    # seeded from torch's CPU generator: the same draws give the same scrambles
    torch.manual_seed(5)
    first = scramble(ids.repeat(20, 1), lengths.repeat(20), rate=0.3)
    torch.manual_seed(5)
    assert torch.equal(scramble(ids.repeat(20, 1), lengths.repeat(20), rate=0.3), first)
    changed = (first != ids.repeat(20, 1)).any(1).float().mean().item()
    assert 0.05 < changed < 0.6  # about 0.3 of the rows (less the 2-unit rows left as they were)
    # a step's draws cut up by its passes: each row scrambled as in one pass of the whole step,
    # a row of no units (width 1 of padding) included
    from paramill.embed.megabatch import scramble_draws

    rows = torch.cat([ids, torch.zeros(1, 6, dtype=ids.dtype)])
    lengths = (rows != 0).sum(1)
    torch.manual_seed(9)
    draws = scramble_draws(4, 6, 0.7)
    assert draws is not None and not np.array_equal(draws[:, 0], np.zeros(4))
    whole = scramble(rows, lengths, 0.7, draws)
    for part in ([3, 1], [0, 2]):  # shortest first, as by_length cuts them
        width = max(1, int(lengths[part].max()))
        got = scramble(rows[part, :width], lengths[part], 0.7, draws[part])
        assert torch.equal(got, whole[part, :width])


def _resume_corpus(path) -> None:
    """25,000 pairs: three row groups of the id store, so three buffers an epoch."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(400)]
    with open(path, "w") as fh:
        for _ in range(25_000):
            a = " ".join(rng.choice(words, 6))
            fh.write(f"{a}\t{a} {rng.choice(words)}\n")


def _resume_command(tmp_path, out: str, epochs: int, minutes: float | None = None) -> list[str]:
    launch = [] if minutes is None else ["--launch", json.dumps({"embed.train": {"checkpoint_minutes": minutes}})]
    return [sys.executable, "-m", "paramill.cli", "--threads", "1", "embed", "train", str(tmp_path / "p.tsv"),
            "--settings", json.dumps({"epochs": epochs, "batch_size": 50, "megabatch": 2, "buffer_pairs": 10000}),
            "--spec", '{"components": ["word"], "units": "word", "dim": 16}', "--out", str(tmp_path / out), *launch]


def _same_model(a, b) -> bool:
    a, b = (torch.load(x, weights_only=True) for x in (a, b))
    return a["history"] == b["history"] and all(torch.equal(a["state_dict"][k], b["state_dict"][k])
                                                for k in a["state_dict"])


@pytest.mark.slow
def test_embed_train_killed_by_sigkill_within_an_epoch_resumes_to_the_uninterrupted_model(tmp_path):
    """The command as a job runs it: ``paramill embed train`` over 25,000 pairs (three
    buffers an epoch), a checkpoint due after every mega-batch (``checkpoint_minutes``
    through ``--launch``, as the workflow passes it), killed with SIGKILL once it says it wrote
    one in its first epoch; run again, it resumes within that epoch and writes the model an
    uninterrupted run writes, weight for weight."""
    import signal

    _resume_corpus(tmp_path / "p.tsv")
    env = {**os.environ, "PARAMILL_PROGRESS": "0"}
    subprocess.run(_resume_command(tmp_path, "a.pt", 2), check=True, env=env, capture_output=True)
    killed = _resume_command(tmp_path, "b.pt", 2, 1e-9)
    status, _ = stopped_when(killed, env, lambda line: line.startswith("embed train: checkpoint in epoch 1 after"),
                             lambda proc: proc.send_signal(signal.SIGKILL))
    assert status == -signal.SIGKILL, "the run ended before a checkpoint within its first epoch"
    kept = torch.load(tmp_path / "b.pt.resume.pt", weights_only=True)
    assert kept["epoch"] == 0 and kept["within_epoch"]["pairs"] > 0 and not (tmp_path / "b.pt").exists()
    done = subprocess.run(killed, check=True, env=env, capture_output=True, text=True)
    assert "embed train: resuming in epoch 1, after" in done.stderr
    assert "asked to stop" not in done.stderr  # a checkpoint by the clock: nothing asked it to
    assert _same_model(tmp_path / "a.pt", tmp_path / "b.pt")


@pytest.mark.slow
def test_embed_train_stopped_by_sigterm_writes_its_checkpoint_first_and_resumes(tmp_path):
    """SIGTERM (SLURM's time limit, ``scancel``; SIGKILL follows after ``KillWait``) during
    the epochs, with no checkpoint due by the clock (``checkpoint_minutes: 0``): the command
    writes a checkpoint at the end of the mega-batch it came in, says so and ends with status
    143; run again, it resumes there and writes the model of a run never stopped."""
    import signal
    import time

    _resume_corpus(tmp_path / "p.tsv")
    env = {**os.environ, "PARAMILL_PROGRESS": "0"}
    subprocess.run(_resume_command(tmp_path, "a.pt", 3), check=True, env=env, capture_output=True)
    stopped = _resume_command(tmp_path, "b.pt", 3, 0)

    def stop(proc) -> None:
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)

    status, rest = stopped_when(stopped, env, lambda line: line.startswith("embed train: id store of"),
                                stop)  # the epochs start
    assert status == 143, rest
    assert "asked to stop (SIGTERM)" in rest and "stopped (signal 15) after its checkpoint" in rest
    kept = torch.load(tmp_path / "b.pt.resume.pt", weights_only=True)
    assert kept["within_epoch"]["pairs"] > 0 and not (tmp_path / "b.pt").exists()
    assert kept["within_epoch"]["stopped"]["signal"] == 15
    done = subprocess.run(stopped, check=True, env=env, capture_output=True, text=True)
    # the resumed run's log says why (under Snakemake the stopped attempt's log is overwritten)
    at = kept["within_epoch"]["stopped"]["at"]
    assert f"embed train: resuming in epoch {kept['epoch'] + 1}, after" in done.stderr
    assert f"; the run before was asked to stop (SIGTERM) and wrote it at {at}\n" in done.stderr
    assert _same_model(tmp_path / "a.pt", tmp_path / "b.pt")


def test_a_checkpoint_within_an_epoch_is_due_minutes_after_the_last_one():
    """Due at the first mega-batch to end ``checkpoint_minutes`` after the last checkpoint,
    an epoch's end's included; at a buffer's end it reads as the next buffer's start; 0 writes
    none; the loss is read only when one is due."""
    from paramill.embed.resume import Checkpoints

    now, wrote = [0.0], []

    class Total:
        reads = 0

        def item(self):
            Total.reads += 1
            return 2.5

    marks = Checkpoints(2, lambda epoch, within: wrote.append((epoch, within)), clock=lambda: now[0])
    for minute, offset in ((1.0, 40), (2.5, 80), (3.0, 100), (4.4, 120)):
        now[0] = minute * 60
        marks.after(0, 3, offset, 100, offset // 10, 300 + offset, Total())
    assert wrote == [(0, {"buffers": 3, "offset": 80, "batches": 8, "pairs": 380, "loss_total": 2.5})]
    assert Total.reads == 1 and marks.within_written == 1
    now[0] = 5.0 * 60
    marks.written()  # the epoch's end
    now[0] = 6.9 * 60
    marks.after(1, 1, 50, 100, 5, 150, Total())
    now[0] = 7.0 * 60
    marks.after(1, 1, 100, 100, 10, 200, Total())  # the buffer's end: the next one's start
    assert [w[0] for w in wrote] == [0, 1] and wrote[1][1]["buffers"] == 2 and wrote[1][1]["offset"] == 0
    never = Checkpoints(0, lambda *a: wrote.append(a), clock=lambda: now[0])
    now[0] = 1e9
    never.after(0, 1, 1, 2, 1, 1, Total())
    assert len(wrote) == 2 and Total.reads == 2
    never.stop = 15  # asked to stop: a checkpoint now whatever the minutes, then the end
    with pytest.raises(SystemExit) as stopped:
        never.after(0, 1, 1, 2, 1, 1, Total())
    assert stopped.value.code == 143 and wrote[-1][1]["offset"] == 1


@pytest.mark.parametrize("components", [("word", "trigram"), ("gran",)])
def test_a_run_killed_within_an_epoch_resumes_after_its_last_checkpointed_buffer(tmp_path, monkeypatch,
                                                                                 components):
    """``checkpoint_minutes``: a checkpoint within an epoch, after a mega-batch, holds where
    the epoch stands; a run killed after it resumes there, reads only the epoch's other
    buffers, starts the first at that place, and ends with the losses and weights of a run
    never stopped, to the bit (an averaging model, and GRAN, whose scrambles draw from
    torch's generator). The key is launch-only: the resumed run may set another. A checkpoint
    within the last epoch asked for is no model of that many epochs: lowering ``epochs`` to
    it starts afresh."""
    from paramill.embed import data as data_mod
    from paramill.embed.resume import Checkpoints

    class Killed(Exception):
        pass

    monkeypatch.setattr("paramill.embed.train.CHUNK_PAIRS", 4)
    spec = ModelSpec(components=components, dim=8, hidden=8, units="word")
    settings = dict(batch_size=4, megabatch=1, buffer_pairs=8)  # 4 buffers an epoch, 2 mega-batches each
    whole = train(PAIRS, tmp_path / "a.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    assert whole["checkpoints_within_epochs"] == 0  # 30 minutes by default: none here

    real, written = Checkpoints.after, []

    def every_megabatch(self, epoch, buffers, offset, size, batches, pairs, total):
        self.last = float("-inf")  # due now
        real(self, epoch, buffers, offset, size, batches, pairs, total)
        written.append((epoch, buffers, offset, pairs))
        if len([w for w in written if w[0] == 1]) == 3:  # killed in its second epoch, mid-buffer
            raise Killed

    monkeypatch.setattr(Checkpoints, "after", every_megabatch)
    with pytest.raises(Killed):
        train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, checkpoint_minutes=1, **settings))
    assert [w[:3] for w in written if w[0] == 1] == [(1, 0, 4), (1, 0, 8), (1, 1, 4)]
    kept = torch.load(tmp_path / "b.pt.resume.pt", weights_only=True)
    assert kept["epoch"] == 1 and len(kept["history"]) == 1
    assert {k: kept["within_epoch"][k] for k in ("buffers", "offset", "pairs")} == {
        "buffers": 1, "offset": 4, "pairs": written[-1][3]}
    assert 0 < written[-1][3] < 30 and kept["within_epoch"]["batches"] == 3

    monkeypatch.setattr(Checkpoints, "after", real)
    read, epoch_buffers = [], data_mod.epoch_buffers
    monkeypatch.setattr(data_mod, "epoch_buffers",
                        lambda *a, **k: read.append((a[3], k["skip"])) or epoch_buffers(*a, **k))
    resumed = train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, checkpoint_minutes=0, **settings))
    assert read[0] == (1, 1)  # epoch 2 without its first buffer (and the second from its place)
    assert resumed["history"] == whole["history"] and len(resumed["epoch_seconds"]) == 2
    a = torch.load(tmp_path / "a.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)

    monkeypatch.setattr(Checkpoints, "after", every_megabatch)
    written.clear()
    with pytest.raises(Killed):
        train(PAIRS, tmp_path / "c.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    monkeypatch.setattr(Checkpoints, "after", real)
    one = train(PAIRS, tmp_path / "c.pt", spec, EmbedTrainSettings(epochs=1, **settings))
    assert [h["epoch"] for h in one["history"]] == [1] and one["history"] == whole["history"][:1]


def test_training_streams_in_small_buffers_and_resumes_exactly(tmp_path, monkeypatch):
    monkeypatch.setattr("paramill.embed.train.CHUNK_PAIRS", 4)
    spec = ModelSpec(components=("word", "lstm"), dim=8, hidden=8)
    settings = dict(batch_size=4, megabatch=2, buffer_pairs=8)
    full = train(PAIRS, tmp_path / "a.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    assert full["pairs"] == 30 and not (tmp_path / "a.pt.ids").exists()  # store removed
    train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=2, **settings))
    assert not (tmp_path / "b.pt.ids").exists()
    train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    a = torch.load(tmp_path / "a.pt", weights_only=True)
    b = torch.load(tmp_path / "b.pt", weights_only=True)
    for key in a["state_dict"]:
        assert torch.allclose(a["state_dict"][key], b["state_dict"][key], atol=1e-6), key
    # each buffer (4 an epoch) read in a thread while the one before trained: the same weights
    # to the bit as reading each where the steps ask for it
    assert 0 <= full["buffer_wait_seconds"] <= sum(full["epoch_seconds"])
    monkeypatch.setattr("paramill.embed.train.prefetched", lambda items, waited=None: iter(items))
    inline = train(PAIRS, tmp_path / "i.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    assert inline["history"] == full["history"]
    c = torch.load(tmp_path / "i.pt", weights_only=True)
    for key in a["state_dict"]:
        assert torch.equal(a["state_dict"][key], c["state_dict"][key]), key
    with pytest.raises(ValueError, match="at least two paraphrase pairs, got 1"):
        train([("a b", "c d")], tmp_path / "c.pt", spec, EmbedTrainSettings(epochs=1))
    blank = tmp_path / "blank.tsv"
    blank.write_text("\n\none field\n\n")
    with pytest.raises(ValueError, match=r"blank\.tsv: training needs at least two paraphrase "
                                         r"pairs, got 0 \(a TSV line needs two tab-separated"):
        train(PairSource.from_files([blank]), tmp_path / "d.pt", spec, EmbedTrainSettings(epochs=1))



def test_a_model_too_large_to_train_is_an_error_before_its_weights_are_allocated(tmp_path, monkeypatch):
    """``dim`` 300,000,000 (a typo) took the machine's 22 GB and was killed in its first
    epoch. The parameters are counted on torch's meta device first: where their weights,
    gradients and Adam's moments need more than the device's memory, an error names the
    settings; a model that fits trains as before."""
    from paramill.embed import model as model_module

    seen = []
    monkeypatch.setattr("paramill.run.device.memory_limit", lambda dev: seen.append(dev) or (1 << 10, "a small card"))
    built = []
    real = model_module.SentenceEncoder.__init__
    monkeypatch.setattr(model_module.SentenceEncoder, "__init__",
                        lambda self, *a, **k: built.append(torch.get_default_device().type) or real(self, *a, **k))
    spec = ModelSpec(components=("word", "lstm"), dim=64, hidden=32)
    with pytest.raises(ValueError, match=r"the model's ([\d,]+) parameters \(units: sp \d+; dim 64, hidden 32\) "
                                         r"need [\d.]+ KiB to train .* more than the 1.0 KiB of a small card: "
                                         r"lower embed.model's dim, hidden or max_vocab") as error:
        train(PAIRS, tmp_path / "m.pt", spec, EmbedTrainSettings(epochs=1, batch_size=4))
    parameters = int(error.value.args[0].split("model's ")[1].split(" ")[0].replace(",", ""))
    assert seen == ["cpu"] and built == ["meta"] and not (tmp_path / "m.pt").exists()
    monkeypatch.setattr("paramill.run.device.memory_limit", lambda dev: (parameters * 16, "enough"))
    assert train(PAIRS, tmp_path / "m.pt", spec, EmbedTrainSettings(epochs=1, batch_size=4))["pairs"] == 30
    assert built == ["meta", "meta", "cpu"]  # counted, then built
    assert parameters == sum(p.numel() for p in load_model(tmp_path / "m.pt").parameters()) > 10_000


def test_the_memory_limit_is_the_lowest_of_the_machines_the_jobs_control_group_and_ulimit(tmp_path, monkeypatch):
    """SLURM's ``--mem`` and containers limit a job through its control group (v2
    ``memory.max``, v1 ``memory.limit_in_bytes``, on the job's group or one it is in);
    ``max`` or v1's 2**63 is no limit. ``ulimit -v`` limits the process's address space."""
    import resource

    from paramill.run.device import memory_limit

    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY,) * 2)
    proc, groups = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text("MemTotal:       16384 kB\nMemFree: 1 kB\n")
    (proc / "self" / "cgroup").write_text("0::/system.slice/job_7/step_0\n")
    step = groups / "system.slice" / "job_7" / "step_0"
    step.mkdir(parents=True)
    (step / "memory.max").write_text("max\n")
    assert memory_limit("cpu", str(groups), str(proc)) == (16 << 20, "this machine's memory")
    (step.parent / "memory.max").write_text("4194304\n")  # the job's, above its step
    assert memory_limit("cpu", str(groups), str(proc)) == (4 << 20, "the job's memory limit (its control group)")
    (proc / "self" / "cgroup").write_text("4:memory:/docker/abc\n1:cpu:/\n")  # v1
    (groups / "memory" / "docker" / "abc").mkdir(parents=True)
    (groups / "memory" / "docker" / "abc" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert memory_limit("cpu", str(groups), str(proc))[0] == 16 << 20
    (groups / "memory" / "memory.limit_in_bytes").write_text("2097152\n")
    assert memory_limit("cpu", str(groups), str(proc))[0] == 2 << 20
    assert memory_limit("cpu", str(tmp_path / "none"), str(tmp_path / "none")) is None
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1 << 20, resource.RLIM_INFINITY))  # ulimit -v 1024
    assert memory_limit("cpu", str(groups), str(proc)) == (1 << 20, "the process's address space (ulimit -v)")


def test_a_model_file_whose_settings_name_sizes_its_weights_do_not_have_allocates_nothing(tmp_path, monkeypatch):
    """A 250 KB model file whose spec says ``dim`` 2,000,000,000: the encoder was built at
    that size first (96 GB asked for) and only then compared with the file's weights. It is
    built on torch's meta device and its parameters are the file's own tensors: an error
    naming the file and the tensor, and nothing allocated at the spec's size. A good file
    loads as before, its weights those it holds."""
    from paramill.embed import model as model_module

    spec = ModelSpec(components=("word", "lstm"), units="word", dim=8, hidden=8)
    train(PAIRS, tmp_path / "m.pt", spec, EmbedTrainSettings(epochs=1, batch_size=6))
    data = torch.load(tmp_path / "m.pt", weights_only=False)
    data["spec"]["dim"] = 2_000_000_000
    torch.save(data, tmp_path / "big.pt")
    built, real = [], model_module.SentenceEncoder.__init__
    monkeypatch.setattr(model_module.SentenceEncoder, "__init__",
                        lambda self, *a, **k: built.append(torch.get_default_device().type) or real(self, *a, **k))
    with pytest.raises(InputError, match=r"big\.pt: a paramill embedding model that cannot be rebuilt.*"
                                         r"size mismatch for parts\.0\.embedding\.weight"):
        load_model(tmp_path / "big.pt", "cpu")
    # the spec and a tensor of its size, the tensor a view of one float repeated (stride 0):
    # it loaded, and encoded two sentences into 800 MB, from a 254 KB file
    rows = data["state_dict"]["parts.0.embedding.weight"].shape[0]
    data["state_dict"]["parts.0.embedding.weight"] = torch.zeros(1).as_strided((rows, 2_000_000_000), (0, 0))
    torch.save(data, tmp_path / "strided.pt")
    with pytest.raises(InputError, match=r"strided\.pt: .*parts\.0\.embedding\.weight's \(\d+, 2000000000\) "
                                         r"values are not its own \(strides \(0, 0\) over 4 bytes\)"):
        load_model(tmp_path / "strided.pt", "cpu")
    model = load_model(tmp_path / "m.pt", "cpu")
    assert built == ["meta", "meta"]
    saved = torch.load(tmp_path / "m.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(t, saved[name]) for name, t in model.state_dict().items())
    assert model.encode(["a b c"]).shape == (1, 16) and all(p.requires_grad for p in model.parameters())
    # torch reads a deflated member of its zip as readily, whatever the ratio (195 KB were a
    # 200 MB tensor); torch.save stores every member as it is
    import zipfile

    with zipfile.ZipFile(tmp_path / "m.pt") as plain, \
            zipfile.ZipFile(tmp_path / "packed.pt", "w", compression=zipfile.ZIP_DEFLATED) as packed:
        for info in plain.infolist():
            packed.writestr(info.filename, plain.read(info.filename))
    with pytest.raises(InputError, match=r"packed\.pt: not a paramill embedding model \(its member "
                                         r"\S+/data\.pkl is compressed"):
        load_model(tmp_path / "packed.pt", "cpu")


def test_memory_running_out_while_a_model_is_built_is_not_said_to_be_the_files_fault(tmp_path):
    """A model file's parts that do not fit are an error naming it; the host's or the GPU's
    memory running out meanwhile is raised as it is (the command line's out-of-memory line,
    exit status 3), not called a damaged file."""
    from paramill.run import device
    from paramill.errors import InputError
    from paramill.run.modelfiles import rebuilt_from

    for said in ("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory",
                 "mkl_malloc: failed to allocate memory", "CUDA out of memory. Tried to allocate 2 GiB"):
        with pytest.raises(RuntimeError, match="memory"):
            with rebuilt_from(tmp_path / "m.pt", "paramill embedding model"):
                raise RuntimeError(said)
    assert device.host_out_of_memory(MemoryError()) and not device.host_out_of_memory("size mismatch")
    with pytest.raises(InputError, match=r"m\.pt: a paramill embedding model that cannot be rebuilt, "
                                         r"damaged or from another paramill \(RuntimeError: size mismatch"):
        with rebuilt_from(tmp_path / "m.pt", "paramill embedding model"):
            raise RuntimeError("size mismatch for parts.0.embedding.weight")


def test_a_model_file_that_is_not_one_names_it_and_a_bad_resume_file_is_set_aside(tmp_path, capfd):
    """A model given to a command (evaluate sts, the identifier's cosine, filters) that is not
    a torch file, is cut, or is another program's torch file: an error naming it (torch's
    own errors named no file: a traceback). A resume checkpoint that does not read is set
    aside and training starts afresh (the run would overwrite it anyway)."""
    from paramill.filters.classifier import load_classifier

    spec = ModelSpec(components=("word",), units="word", dim=8)
    settings = EmbedTrainSettings(epochs=1, batch_size=4, megabatch=1)
    train(PAIRS, tmp_path / "m.pt", spec, settings)
    data = (tmp_path / "m.pt").read_bytes()
    (tmp_path / "text.pt").write_text("not a model")
    (tmp_path / "cut.pt").write_bytes(data[:len(data) // 2])
    torch.save({"format": "someone-else/1", "weights": torch.zeros(2)}, tmp_path / "other.pt")
    for name, why in (("text.pt", r"UnpicklingError"), ("cut.pt", r"(RuntimeError|OSError)"),
                      ("other.pt", r"a torch file without the format mark 'paramill-embed/1'")):
        with pytest.raises(InputError, match=rf"{name}: not a paramill embedding model \({why}"):
            load_model(tmp_path / name)
        with pytest.raises(InputError, match=rf"{name}: not a paramill reference classifier"):
            load_classifier(tmp_path / name)
    assert load_model(tmp_path / "m.pt").dim == 8
    whole = torch.load(tmp_path / "m.pt", weights_only=True)  # reads as torch, cannot be rebuilt:
    key = next(iter(whole["state_dict"]))
    torch.save({**whole, "state_dict": {**whole["state_dict"], key: torch.zeros(3)}}, tmp_path / "shape.pt")
    torch.save({**whole, "spec": {**whole["spec"], "dim": "eight"}}, tmp_path / "spec.pt")
    for name in ("shape.pt", "spec.pt"):
        with pytest.raises(InputError, match=rf"{name}: a paramill embedding model that cannot be rebuilt"):
            load_model(tmp_path / name)
    (tmp_path / "r.pt").write_bytes(data[:100])
    capfd.readouterr()
    got = train(PAIRS, tmp_path / "n.pt", spec, settings, resume=tmp_path / "r.pt")
    err = capfd.readouterr().err
    assert "r.pt: not a paramill embedding model" in err and "set aside as r.pt.unreadable" in err
    assert (tmp_path / "r.pt.unreadable").read_bytes() == data[:100]
    assert got["history"][0]["epoch"] == 1 and load_model(tmp_path / "n.pt").dim == 8


def test_tsv_lines_without_two_fields_are_counted_in_the_log(tmp_path, capfd):
    """A TSV line with text but no tab is skipped, as documented, and now counted in the log
    (it was dropped without a word); so is one with an empty side (a tab doubled: the second
    sentence was the third field, and the pair was dropped without a word); blank lines are
    not counted."""
    tsv = tmp_path / "p.tsv"
    tsv.write_text("a man reads\ta man is reading\nno tab here\n\nthe dog runs\ta dog is running\n"
                   "spaces not tabs  between\na tab\t\tdoubled\n \t\t \n\tno first side\n")
    source = PairSource.from_files([tsv])
    assert [pair for s1, s2 in source for pair in zip(s1, s2)] == [
        ("a man reads", "a man is reading"), ("the dog runs", "a dog is running")]
    assert source.skipped == {str(tsv): 4}  # a line of blanks and tabs is a blank line
    capfd.readouterr()
    train(PairSource.from_files([tsv]), tmp_path / "m.pt", ModelSpec(components=("word",), units="word", dim=8),
          EmbedTrainSettings(epochs=1, batch_size=2, megabatch=1))
    assert (f"embed train: {tsv}: 4 lines without two tab-separated sentences (no tab, or an "
            "empty side) skipped") in capfd.readouterr().err


def test_a_pair_with_a_side_over_max_chars_is_left_out_counted_and_said(tmp_path, capfd):
    """One pasted article as a side (15,000 words in a 212 KB file) padded a GRAN's pass to
    15,000 steps and asked for 34 GB. A pair with a side over `max_chars` characters is left
    out, counted in the log and the summary; the model trained is the one without the pair
    (the same losses); 0 keeps every pair; the limit is part of what the id store and a
    resumed run check."""
    pairs = [(s1, s2) for s1, s2 in PAIRS]
    article = " ".join(["the cat sat on the mat"] * 300)  # 6,899 characters
    tsv = tmp_path / "p.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in pairs[:5] + [("a short one", article)]
                           + pairs[5:] + [(article, "x")]))
    spec = ModelSpec(components=("gran",), units="word", dim=8)
    settings = EmbedTrainSettings(epochs=2, batch_size=4, megabatch=2)
    capfd.readouterr()
    long = train(PairSource.from_files([tsv]), tmp_path / "m.pt", spec, settings)
    assert "embed train: 2 pairs with a side over 1,000 characters left out (embed.advanced.train.max_chars)" \
        in capfd.readouterr().err
    short = train(pairs, tmp_path / "s.pt", spec, settings)
    assert (long["pairs"], long["pairs_too_long"]) == (len(pairs), 2)
    assert [h["loss"] for h in long["history"]] == [h["loss"] for h in short["history"]]
    source = PairSource.from_files([tsv], max_chars=0)
    assert sum(len(s1) for s1, _ in source) == len(pairs) + 2 and source.too_long == 0
    assert PairSource.from_files([tsv], max_chars=1000).describe() != source.describe()
    assert len(article) > 1000 > max(len(s) for pair in pairs for s in pair)


def test_a_tsv_first_line_of_column_names_is_skipped_and_said(tmp_path, capfd):
    """A pair TSV written with a header (paramill's s1/s2, a candidate table's en_ref/
    candidate, STS-style sentence1/sentence2) trained on its header as a pair. The first line
    with text is skipped when it names the columns, and the log says so with its line number;
    the same words further down, or a first line that is a pair, are pairs."""
    body = "a man reads\ta man is reading\nthe dog runs\ta dog is running\n"
    cases = {"s1\ts2\n": 1, "\n Sentence1 \tSENTENCE2\tscore\n": 2, "en_ref\tcandidate\n": 1,
             "a cat sleeps\ta cat is sleeping\n": None}
    for i, (head, line) in enumerate(cases.items()):
        tsv = tmp_path / f"p{i}.tsv"
        tsv.write_text(head + body + "s1\ts2\n")
        source = PairSource.from_files([tsv])
        got = [pair for s1, s2 in source for pair in zip(s1, s2)]
        first = [("a cat sleeps", "a cat is sleeping")] if line is None else []
        assert got == first + [("a man reads", "a man is reading"),
                               ("the dog runs", "a dog is running"), ("s1", "s2")], head
        assert (str(tsv) in source.headers) == (line is not None)
        if line is not None:
            assert source.headers[str(tsv)][0] == line and source.skipped[str(tsv)] == 0
    tsv = tmp_path / "p1.tsv"
    capfd.readouterr()
    train(PairSource.from_files([tsv]), tmp_path / "m.pt", ModelSpec(components=("word",), units="word", dim=8),
          EmbedTrainSettings(epochs=1, batch_size=2, megabatch=1))
    assert f"embed train: {tsv}: line 2 names the columns (Sentence1, SENTENCE2), skipped" \
        in capfd.readouterr().err

def test_the_next_epochs_first_buffer_is_read_while_the_checkpoint_is_written(tmp_path, monkeypatch):
    """A corpus of one buffer: epoch 2's buffer is asked for (in the read-ahead thread) while
    epoch 1's checkpoint is being written, not after; the epochs' buffers are those of
    epoch_buffers, in order, each epoch's followed by None."""
    import threading

    import paramill.embed.data as data

    real, asked = data.epoch_buffers, {}

    def watched(store, units, seed, epoch, *rest, **kw):
        asked.setdefault(epoch, threading.Event()).set()
        return real(store, units, seed, epoch, *rest, **kw)

    saving, waits = torch.save, []

    def save(obj, f, *args, **kwargs):  # the first checkpoint waits (at most 10 s) for epoch 2's read
        if isinstance(obj, dict) and obj.get("epoch") == 1 and not waits:
            waits.append(asked.setdefault(1, threading.Event()).wait(10))
        return saving(obj, f, *args, **kwargs)

    monkeypatch.setattr(data, "epoch_buffers", watched)
    monkeypatch.setattr(torch, "save", save)
    summary = train(PAIRS, tmp_path / "m.pt", ModelSpec(components=("word",), units="word", dim=8),
                    EmbedTrainSettings(epochs=3, batch_size=2, buffer_pairs=1000))
    assert waits == [True] and sorted(asked) == [0, 1, 2] and len(summary["history"]) == 3
    monkeypatch.undo()
    from paramill.embed.model import build

    model = build(ModelSpec(units="word", components=("word",), dim=4), [x for p in PAIRS for x in p])
    data.write_ids(model.vocabs, model.featurizers, PairSource.from_pairs(PAIRS), tmp_path / "ids", 2)
    items = list(data.run_buffers(tmp_path / "ids", ["word"], 3, range(1, 3), 4))
    ends = [k for k, item in enumerate(items) if item is None]
    assert len(ends) == 2 and ends[-1] == len(items) - 1 and ends[0] > 1  # several buffers an epoch
    for epoch, chunk in zip((1, 2), (items[:ends[0]], items[ends[0] + 1:ends[1]])):
        want = list(real(tmp_path / "ids", ["word"], 3, epoch, 4))
        assert [o.tolist() for _, o in chunk] == [o.tolist() for _, o in want]
        assert sum(b.n for b, _ in chunk) == len(PAIRS)


def test_tf32_is_allowed_only_within_and_only_on_cuda(tmp_path, monkeypatch):
    """device.matmul_tf32 sets torch's TF32 flag within and puts it back after, an error
    included; on a CPU, embed.train.tf32 leaves it off (nothing of the CPU's arithmetic
    changes)."""
    import paramill.embed.train as training
    from paramill.run import device

    assert torch.backends.cuda.matmul.allow_tf32 is False
    with device.matmul_tf32(True):
        assert torch.backends.cuda.matmul.allow_tf32 is True
    with pytest.raises(KeyError), device.matmul_tf32(True):
        raise KeyError("stops the epochs")
    assert torch.backends.cuda.matmul.allow_tf32 is False
    seen, real = [], training._epoch
    monkeypatch.setattr(training, "_epoch", lambda *a, **k: seen.append(
        torch.backends.cuda.matmul.allow_tf32) or real(*a, **k))
    spec = ModelSpec(components=("word",), units="word", dim=8)
    on = train(PAIRS, tmp_path / "on.pt", spec, EmbedTrainSettings(epochs=2, batch_size=6, tf32=True))
    off = train(PAIRS, tmp_path / "off.pt", spec, EmbedTrainSettings(epochs=2, batch_size=6))
    assert seen == [False] * 4 and on["history"] == off["history"]


def test_a_killed_run_resumes_from_its_id_store(tmp_path, monkeypatch):
    import paramill.embed.data as data

    spec = ModelSpec(components=("word",), dim=8)
    settings = EmbedTrainSettings(epochs=3, batch_size=6)
    real = data.epoch_buffers

    def killed(store, units, seed, epoch, *rest, **kw):
        if epoch == 1:
            raise KeyboardInterrupt  # the job is killed during its second epoch
        return real(store, units, seed, epoch, *rest, **kw)

    monkeypatch.setattr(data, "epoch_buffers", killed)
    with pytest.raises(KeyboardInterrupt):
        train(PAIRS, tmp_path / "k.pt", spec, settings)
    assert (tmp_path / "k.pt.ids" / "meta.json").exists() and (tmp_path / "k.pt.resume.pt").exists()
    monkeypatch.setattr(data, "epoch_buffers", real)
    calls = []
    from paramill.embed import featurise, rawstore

    monkeypatch.setattr(featurise, "_ids_column", lambda *a: calls.append(a))
    monkeypatch.setattr(rawstore, "raw_part", lambda *a: calls.append(a))  # SentencePiece units
    resumed = train(PAIRS, tmp_path / "k.pt", spec, settings)
    assert calls == [] and [h["epoch"] for h in resumed["history"]] == [1, 2, 3]
    assert not (tmp_path / "k.pt.ids").exists()
    monkeypatch.undo()
    whole = train(PAIRS, tmp_path / "w.pt", spec, settings)
    assert [h["loss"] for h in whole["history"]] == pytest.approx([h["loss"] for h in resumed["history"]])


def _watched_items(count, started, fail_after=None):
    """Items 0..count-1, each noting in ``started`` that it is being made (and by which
    thread); raising after ``fail_after`` items where given."""
    import threading

    for k in range(count):
        if k == fail_after:
            raise ValueError(f"part-{k:06d}.parquet: not a Parquet file")
        started.append((k, threading.current_thread().name))
        yield k


def test_prefetched_makes_the_next_item_while_one_is_used_and_no_more():
    import threading
    import time

    from paramill.embed.data import Waited, prefetched

    started, waited = [], Waited()
    it = prefetched(_watched_items(4, started), waited)
    assert next(it) == 0
    deadline = time.monotonic() + 10
    while len(started) < 2 and time.monotonic() < deadline:  # item 1 made while 0 is in use
        time.sleep(0.01)
    time.sleep(0.2)  # time enough to make more, were it allowed to
    assert [k for k, _ in started] == [0, 1]
    assert {name for _, name in started} == {"paramill-prefetch"}
    assert list(it) == [1, 2, 3] and [k for k, _ in started] == [0, 1, 2, 3]
    assert waited.seconds >= 0
    assert not any(t.name == "paramill-prefetch" for t in threading.enumerate())


def test_prefetched_raises_the_makers_error_where_its_item_is_asked_for():
    from paramill.embed.data import prefetched

    got, started = [], []
    with pytest.raises(ValueError, match=r"part-000002\.parquet: not a Parquet file"):
        for k in prefetched(_watched_items(5, started, fail_after=2)):
            got.append(k)
    assert got == [0, 1]


def test_prefetched_stops_its_thread_when_the_consumer_stops_early():
    import threading

    from paramill.embed.data import prefetched

    started = []
    for k in prefetched(_watched_items(100, started)):
        if k == 1:
            break
    assert not any(t.name == "paramill-prefetch" for t in threading.enumerate())
    assert len(started) <= 3  # item 1 in use, at most item 2 made: never the other 97


def test_prefetched_adds_up_the_seconds_waited_for_slow_items():
    import time

    from paramill.embed.data import Waited, prefetched

    def slow():
        for k in range(3):
            time.sleep(0.05)
            yield k

    waited = Waited()
    assert list(prefetched(slow(), waited)) == [0, 1, 2]
    assert waited.seconds >= 0.12  # the consumer did nothing: it waited for each of the three


# -- SentencePiece units trained by paramill ---------------------------------------------

def test_sentencepiece_units_are_trained_saved_and_loaded_with_the_model(tmp_path):
    spec = ModelSpec(components=("word", "lstm"), units="sp", dim=8, hidden=8, sp_vocab_size=40)
    settings = EmbedTrainSettings(epochs=2, batch_size=6)
    train(PAIRS, tmp_path / "sp.pt", spec, settings)
    data = torch.load(tmp_path / "sp.pt", weights_only=True)
    assert data["sp_proto"].dtype == torch.uint8 and data["sp_proto"].numel() > 100
    pieces = data["vocabs"]["sp"]
    assert "sp" in data["vocabs"] and "word" not in data["vocabs"]
    assert any(p.startswith("\u2581") for p in pieces)  # SentencePiece's word-start mark
    model = load_model(tmp_path / "sp.pt")  # needs no file besides the checkpoint
    units = model.featurizers["sp"]("The dog is sleeping.")
    assert "".join(units).replace("\u2581", " ").strip() == "the dog is sleeping."
    ids = model.vocabs["sp"].ids(units)
    assert 1 not in ids  # every piece of a training sentence is in the vocabulary
    vecs = model.encode(["The dog sleeps.", "The dog is sleeping."])
    again = load_model(tmp_path / "sp.pt").encode(["The dog sleeps.", "The dog is sleeping."])
    assert vecs.shape == (2, 16) and np.allclose(vecs, again)
    # the same seed trains the same SentencePiece model and the same weights
    train(PAIRS, tmp_path / "sp2.pt", spec, settings)
    other = torch.load(tmp_path / "sp2.pt", weights_only=True)
    assert torch.equal(other["sp_proto"], data["sp_proto"]) and other["vocabs"] == data["vocabs"]
    for key in data["state_dict"]:
        assert torch.allclose(other["state_dict"][key], data["state_dict"][key], atol=1e-6), key


def test_sentencepiece_units_resume_with_the_model_they_started_with(tmp_path):
    spec = ModelSpec(components=("word",), units="sp", dim=8, sp_vocab_size=40)
    train(PAIRS, tmp_path / "a.pt", spec, EmbedTrainSettings(epochs=3, batch_size=6))
    train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=1, batch_size=6))
    train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, batch_size=6))
    a = torch.load(tmp_path / "a.pt", weights_only=True)
    b = torch.load(tmp_path / "b.pt", weights_only=True)
    assert torch.equal(a["sp_proto"], b["sp_proto"])
    assert torch.allclose(a["state_dict"]["parts.0.embedding.weight"],
                          b["state_dict"]["parts.0.embedding.weight"], atol=1e-6)


def test_a_given_sentencepiece_model_is_used_and_units_sp_needs_one(tmp_path):
    from paramill.embed.features import Featurizer, train_sentencepiece

    proto = train_sentencepiece([s for p in PAIRS for s in p], vocab_size=40)
    (tmp_path / "m.model").write_bytes(proto)
    spec = ModelSpec(components=("word",), units="sp", dim=8, sp_model=str(tmp_path / "m.model"))
    model = build(spec, SENTS)
    assert model.sp_proto == proto and model.featurizers["sp"]("A dog.") == \
        Featurizer("sp", True, sp_proto=proto)("A dog.")
    torch.save(model.checkpoint(), tmp_path / "given.pt")
    (tmp_path / "m.model").unlink()  # the checkpoint carries the model: the file is not needed
    assert np.allclose(load_model(tmp_path / "given.pt").encode(["A dog."]), model.encode(["A dog."]))
    with pytest.raises(ValueError, match="unit sp needs a SentencePiece model"):
        Featurizer("sp")
    # a reader's error while the trainer reads (a later batch of a Parquet file that does not
    # decode) is raised as it was, naming the file and rows, not as the trainer's RuntimeError

    def broken():
        yield from (s for p in PAIRS for s in p)
        raise InputError("pairs.parquet", None, "column s1, rows 101-200: Invalid UTF8")

    with pytest.raises(InputError, match=r"^pairs.parquet: column s1, rows 101-200: Invalid UTF8$"):
        train_sentencepiece(broken(), vocab_size=40)


def test_the_same_pairs_in_another_folder_train_a_byte_identical_model(tmp_path):
    outs = []
    for where in ("a", "b"):
        folder = tmp_path / where
        folder.mkdir()
        (folder / "pairs.tsv").write_text("".join(f"{x}\t{y}\n" for x, y in PAIRS))
        train(PairSource.from_files([folder / "pairs.tsv"]), folder / "model.pt",
              ModelSpec(components=("word",), dim=8), EmbedTrainSettings(epochs=1, batch_size=6))
        outs.append((folder / "model.pt").read_bytes())
    assert outs[0] == outs[1]


def test_an_old_id_store_is_rebuilt_and_a_failed_one_leaves_nothing(tmp_path, monkeypatch):
    """An id store of the single-file layout is neither read nor reused; a store whose
    writing fails leaves neither files nor a meta.json behind."""
    import paramill.embed.featurise as featurise
    from paramill.embed.data import PairSource, count_units, epoch_buffers, write_ids
    from paramill.embed.model import build_from_counts, featurizers
    from paramill.io.jsonfiles import write_json

    spec = ModelSpec(units="word", components=("word",), dim=4)
    source = PairSource.from_pairs(PAIRS, batch_rows=4)
    model = build_from_counts(spec, count_units(featurizers(spec), source)[0])
    store = tmp_path / "ids"
    store.mkdir()
    (store / "ids.parquet").write_bytes(b"an older paramill's store")
    write_json(store / "meta.json", {"key": {"k": 1}, "pairs": len(PAIRS), "chunk_pairs": 4,
                                     "vocab_sizes": {u: len(v) for u, v in model.vocabs.items()}})
    with pytest.raises(ValueError, match="another layout"):
        next(epoch_buffers(store, ["word"], 0, 0, 8))
    assert write_ids(model.vocabs, model.featurizers, source, store, 4, key={"k": 1}) == len(PAIRS)
    assert sorted(p.name for p in store.iterdir()) == ["meta.json", "parts"]
    assert sum(b.n for b, _ in epoch_buffers(store, ["word"], 0, 0, 8)) == len(PAIRS)
    meta = json.loads((store / "meta.json").read_text())
    for shape in ([meta], {**meta, "pairs": "many"}, {**meta, "pairs": None}):  # JSON, not a meta's
        write_json(store / "meta.json", shape)  # shape: rebuilt (it was an AttributeError)
        assert write_ids(model.vocabs, model.featurizers, source, store, 4, key={"k": 1}) == len(PAIRS)
        assert json.loads((store / "meta.json").read_text()) == meta

    real, calls = featurise.ids_table, []

    def dies_at_the_third_chunk(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("node lost")
        return real(*args)

    monkeypatch.setattr(featurise, "ids_table", dies_at_the_third_chunk)
    with pytest.raises(RuntimeError, match="node lost"):
        write_ids(model.vocabs, model.featurizers, source, store, 4, key={"k": 2})
    assert list(store.iterdir()) == []  # the old store went first: nothing half-written stays


@pytest.mark.parametrize("units", ["word", "sp"])
def test_worker_processes_featurise_to_the_same_counts_and_store_bytes(tmp_path, units):
    """Counting and the id store over several chunks: two worker processes give what one
    process gives, byte for byte (chunks come back in order)."""
    from paramill.embed.data import PairSource, count_units, write_ids
    from paramill.embed.model import build_from_counts, featurizers, sentencepiece_for

    spec = ModelSpec(units=units, components=("word", "trigram"), dim=4, sp_vocab_size=40)
    pairs = [(f"{a} number {i}", f"{b} {i}") for i, (a, b) in enumerate(PAIRS * 4)]
    source = PairSource.from_pairs(pairs, batch_rows=9)  # 14 chunks
    proto = sentencepiece_for(spec, [x for p in pairs for x in p]) if units == "sp" else None
    one, n1 = count_units(featurizers(spec, proto), source, workers=1)
    two, n2 = count_units(featurizers(spec, proto), source, workers=2)
    assert n1 == n2 == len(pairs) and one == two and sum(one["trigram"].values()) > 1000
    model = build_from_counts(spec, one, proto)
    for workers in (1, 2):
        assert write_ids(model.vocabs, model.featurizers, source, tmp_path / f"ids{workers}",
                         chunk_pairs=5, key={"k": 1}, workers=workers) == len(pairs)
    one, two = (sorted((tmp_path / f"ids{w}" / "parts").iterdir()) for w in (1, 2))
    assert len(one) == 14 and [p.read_bytes() for p in one] == [p.read_bytes() for p in two]


def test_sentencepiece_units_are_counted_and_stored_in_one_pass_to_the_same_ids(tmp_path, monkeypatch):
    """A model whose units are all SentencePiece pieces encodes each sentence once: the pass
    that counts the pieces writes their SentencePiece ids, mapped to vocabulary ids when the
    store is read. The counts are those of the counting pass, the buffers hold the ids the
    two-pass store holds (text the model does not know, a sentence without pieces, in
    several chunks and worker processes), and training gives the same weights, bit for bit."""
    import paramill.embed.train as training
    from paramill.embed.data import PairSource, count_units, epoch_buffers, write_ids
    from paramill.embed.model import build_from_counts, featurizers, sentencepiece_for
    from paramill.embed.rawstore import write_raw_store

    spec = ModelSpec(components=("word",), dim=4, sp_vocab_size=40, sp_character_coverage=0.98)
    pairs = [(f"{a} number {i}", f"{b} {i}") for i, (a, b) in enumerate(PAIRS * 4)]
    proto = sentencepiece_for(spec, [x for p in pairs for x in p])  # before the rare text below
    pairs += [("a žluťoučký kůň", "a horse ☃"), ("\u200b", "the man"), ("ž ☃ ž", "☃")]
    source = PairSource.from_pairs(pairs, batch_rows=9, drop_identical=False)
    feats = featurizers(spec, proto)
    hits, surfaces = feats["sp"].unknown(["a horse ☃"], *feats["sp"].piece_ids(["a horse ☃"]))
    assert surfaces  # the snowman is text the model does not know
    assert feats["sp"].piece_ids(["\u200b"])[1].tolist() == [0]  # a sentence without pieces
    counts, n = count_units(feats, source)
    model = build_from_counts(spec, counts, proto)
    assert any(u in model.vocabs["sp"].index for u in surfaces)  # and it has an id of its own
    for workers in (1, 2):
        store = tmp_path / f"raw{workers}"
        assert write_raw_store(feats["sp"], source, store, 5, {"k": 1}, workers) == (n, counts["sp"])
        assert write_raw_store(feats["sp"], source, store, 5, {"k": 1}, workers) == (n, None)  # reused
    write_ids(model.vocabs, model.featurizers, source, tmp_path / "ids", chunk_pairs=5, key={"k": 1})
    for workers in (1, 2):
        raw = list(epoch_buffers(tmp_path / f"raw{workers}", ["sp"], 3, 0, 10, model.vocabs,
                                 model.featurizers))
        two = list(epoch_buffers(tmp_path / "ids", ["sp"], 3, 0, 10))
        assert len(raw) == len(two) > 2
        for (a, order_a), (b, order_b) in zip(raw, two):
            assert np.array_equal(a.flat["sp"], b.flat["sp"]) and np.array_equal(a.offsets["sp"], b.offsets["sp"])
            assert np.array_equal(order_a, order_b)
    settings = EmbedTrainSettings(epochs=2, batch_size=6, buffer_pairs=10)
    one = train(pairs, tmp_path / "one.pt", spec, settings)
    monkeypatch.setattr(training, "one_pass", lambda feats: False)
    both = train(pairs, tmp_path / "two.pt", spec, settings)
    assert [h["loss"] for h in one["history"]] == [h["loss"] for h in both["history"]]
    a, b = (torch.load(tmp_path / name, weights_only=True)["state_dict"] for name in ("one.pt", "two.pt"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


class _RecordingSentencePiece:
    """A SentencePiece processor that notes the ``num_threads`` of every call."""

    def __init__(self, sp):
        self.sp, self.threads = sp, []

    def encode(self, *args, **kwargs):
        self.threads.append(kwargs.get("num_threads"))
        return self.sp.encode(*args, **kwargs)

    def decode(self, *args, **kwargs):
        self.threads.append(kwargs.get("num_threads"))
        return self.sp.decode(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.sp, name)


def _threads_here(chunk):
    from paramill.run import device

    return device.threads()


def test_sentencepiece_batches_use_the_jobs_threads_not_the_machines(tmp_path, monkeypatch):
    """Left to itself, a SentencePiece batch call starts one thread per CPU of the machine
    (not of the job's allocation), in every featurising worker. The featurizer and the NMT
    segmenter pass the job's thread count, which is 1 in a worker."""
    from paramill.run import device
    from paramill.embed.featurise import ordered_map
    from paramill.embed.model import featurizers, sentencepiece_for
    from paramill.nmt.subwords import Segmenter

    spec = ModelSpec(units="sp", components=("word",), dim=4, sp_vocab_size=40)
    sentences = [x for p in PAIRS for x in p]
    proto = sentencepiece_for(spec, sentences)
    monkeypatch.setattr(device, "_threads", 3)  # as `paramill --threads 3` sets it
    featurizer = featurizers(spec, proto)["sp"]
    featurizer._sp = _RecordingSentencePiece(featurizer._sp)
    flat, lengths = featurizer.piece_ids(sentences)
    assert len(lengths) == len(sentences) and featurizer._sp.threads == [3]
    # in batches of a few sentences (bounded memory in each call): the same ids
    small_flat, small_lengths = featurizer.piece_ids(sentences, batch=3)
    assert np.array_equal(small_flat, flat) and np.array_equal(small_lengths, lengths)
    assert featurizer._sp.threads == [3] * (1 + -(-len(sentences) // 3))
    (tmp_path / "sp.model").write_bytes(proto)
    segmenter = Segmenter(tmp_path / "sp.model")
    segmenter.sp = _RecordingSentencePiece(segmenter.sp)
    pieces = segmenter.encode(sentences[:4])
    assert segmenter.decode(pieces) == sentences[:4]
    assert segmenter.sp.threads == [3, 3]
    chunks = [([s], [s]) for s in sentences[:4]]
    assert [n for n, _ in ordered_map(_threads_here, chunks, workers=2)] == [1, 1, 1, 1]


class _CountedPickles:
    """Counts how often it is pickled (in this process: each copy a worker is sent)."""

    pickled = 0

    def __reduce__(self):
        type(self).pickled += 1
        return _CountedPickles, ()


def _chunk_size(context, chunk):
    assert isinstance(context, _CountedPickles)
    return len(chunk[0])


def test_workers_get_the_featurizers_once_not_with_every_chunk():
    """Sent with every chunk, the featurizers and vocabularies were rebuilt per chunk in each
    worker (a SentencePiece model each time) and their id tables kept: a worker's memory grew
    with the corpus (4.3 GB for 16 workers at 10M pairs). They go once, when a worker starts."""
    from paramill.embed.featurise import ordered_map

    chunks = [([f"s{i}"] * (i + 1), [f"t{i}"] * (i + 1)) for i in range(12)]
    _CountedPickles.pickled = 0
    got = list(ordered_map(_chunk_size, chunks, workers=2, context=(_CountedPickles(),)))
    assert got == [(i + 1, i + 1) for i in range(12)]  # in order
    assert 1 <= _CountedPickles.pickled <= 2  # once per worker started, not 12 times
    here = list(ordered_map(_chunk_size, chunks[:1], workers=2, context=(_CountedPickles(),)))
    assert here == [(1, 1)]  # one chunk: featurised in this process



def test_a_pass_over_the_pairs_shows_its_progress(capsys, monkeypatch):
    """The counting pass and the id store take minutes at tens of millions of pairs: each
    draws a bar of the pairs done (of the source's rows where it knows them), in the trainer."""
    from paramill.embed.featurise import ordered_map

    monkeypatch.setenv("PARAMILL_PROGRESS", "1")
    chunks = [([f"s{i}"] * 3, [f"t{i}"] * 3) for i in range(4)]
    got = list(ordered_map(_chunk_size, chunks, workers=1, context=(_CountedPickles(),),
                           what="embed counting", total=12))
    assert got == [(3, 3)] * 4
    bar = capsys.readouterr().err.split("\r")[-1]
    assert bar.startswith("embed counting: 100%") and "| 12/12 [" in bar, bar
    monkeypatch.setenv("PARAMILL_PROGRESS", "0")
    assert list(ordered_map(_chunk_size, chunks, 1, context=(_CountedPickles(),), what="x")) == got
    assert capsys.readouterr().err == ""


def test_a_featurising_worker_imports_neither_torch_nor_polars(tmp_path):
    """A spawned worker imports the featurising module (what it runs) and nothing else: with
    polars it held 20 MB more each (16 workers: 320 MB), with torch far more. Nor pandas
    once it has worked (a chunk of SentencePiece units in one pass, a chunk of word ids):
    ``pa.array`` of the numpy ids made pyarrow import it, 45 MB more at each worker's peak."""
    from paramill.embed.model import sentencepiece_for

    spec = ModelSpec(units="sp", components=("word",), dim=4, sp_vocab_size=40)
    (tmp_path / "sp.model").write_bytes(sentencepiece_for(spec, [x for p in PAIRS for x in p]))
    chunk = (pa.array(["the dog sleeps", ""], pa.large_string()), pa.array(["a cat", "b"]), 0)
    (tmp_path / "chunk").write_bytes(pickle.dumps(chunk))  # as the pool sends it
    code = f"""
import pickle, sys, pyarrow as pa, paramill.embed.featurise as fe
from paramill.embed.features import Featurizer, Vocab
sp, words = Featurizer("sp", sp_model={str(tmp_path / "sp.model")!r}), Featurizer("word")
chunk = pickle.loads(open({str(tmp_path / "chunk")!r}, "rb").read())
schema = pa.schema([pa.field(f"sp_{{k}}", pa.list_(pa.int32())) for k in (1, 2)])
rows = fe.raw_part(sp, schema, {str(tmp_path)!r}, 1, chunk)[0]
ids = fe._ids_column(Vocab(["<pad>", "<unk>", "dog", "cat"]), words, ["the dog", "cat cat", ""])
print(rows, ids.type, ids.to_pylist())
print(sorted(m for m in ('polars', 'torch', 'sentence_transformers', 'pandas') if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["2 list<item: int32> [[1, 2], [3, 3], [1]]", "[]"]
    assert pq.read_table(tmp_path / "part-000000.parquet").num_rows == 2

def test_a_buffer_reads_arrow_ids_as_they_are_sliced_and_refuses_missing_ones():
    """A buffer's ids and offsets come from the Arrow lists' own buffers, slices included
    (an epoch's row groups are slices of their files); a sentence stored without a list is
    an error, not ids read from garbage."""
    from paramill.embed.buffer import Buffer

    lists = pa.array([[9], [1, 2], [], [3, 4, 5], [6]], pa.list_(pa.int32()))
    table = pa.table({"u_1": lists, "u_2": pa.array([[7], [8, 8], [1], [2], []], pa.list_(pa.int32()))})
    buffer = Buffer(table.slice(1, 3), ["u"])
    assert buffer.n == 3 and buffer.flat["u"].tolist() == [1, 2, 3, 4, 5, 8, 8, 1, 2]
    assert buffer.offsets["u"].tolist() == [0, 2, 2, 5, 7, 8, 9]
    with pytest.raises(ValueError, match="1 sentences without ids"):
        Buffer(pa.table({"u_1": pa.array([[1], None], pa.list_(pa.int32())),
                         "u_2": pa.array([[2], [3]], pa.list_(pa.int32()))}), ["u"])


@pytest.mark.parametrize("units", ["word", "sp"])
def test_training_imports_no_pandas(tmp_path, units):
    """Nothing training runs imports pandas (~50 MB a process): pyarrow's ``to_numpy`` did,
    at the first epoch's first buffer (a SentencePiece store's also as it was mapped)."""
    code = f"""
import sys
from paramill.embed.model import ModelSpec
from paramill.embed.train import EmbedTrainSettings, train
pairs = [("a cat sat", "the cat sat down"), ("dogs bark", "a dog barks"), ("rain falls", "it rains")] * 4
train(pairs, {str(tmp_path / "m.pt")!r}, ModelSpec(components=("word",), dim=4, units={units!r},
                                                   sp_vocab_size=40),
      EmbedTrainSettings(epochs=2, batch_size=4, megabatch=2))
print("pandas" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_loading_a_model_builds_no_random_weights_and_imports_no_dynamo(tmp_path):
    """A job that only loads a model (scoring, STS, encoding) builds its shape on torch's meta
    device with no random initialisation: torch's meta ``normal_`` imports ``torch._dynamo``,
    about a second a process. The loaded model is the saved one, weight for weight; torch's
    ``init.normal_`` is itself again afterwards and initialises real tensors as before."""
    from torch.nn import init

    from paramill.run.modelfiles import on_meta

    spec = ModelSpec(components=("word", "trigram", "lstm"), dim=8, hidden=8)
    train(PAIRS, tmp_path / "m.pt", spec, EmbedTrainSettings(epochs=1, batch_size=6))
    code = f"""
import sys, torch
from paramill.embed.model import load_model
model = load_model({str(tmp_path / "m.pt")!r}, "cpu")
saved = torch.load({str(tmp_path / "m.pt")!r}, weights_only=True)["state_dict"]
same = all(torch.equal(t, saved[k]) for k, t in model.state_dict().items()) and len(saved) == len(model.state_dict())
print("torch._dynamo" in sys.modules, same, model.encode(["a dog sleeps"]).shape)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "(1,", "24)"]  # 3 components of 8
    normal = init.normal_
    with on_meta():
        shape = torch.nn.Embedding(5, 3)
        assert shape.weight.is_meta and init.normal_ is not normal
    assert init.normal_ is normal
    torch.manual_seed(0)
    real = torch.nn.Embedding(5, 3).weight.detach().clone()
    torch.manual_seed(0)
    assert torch.equal(real, torch.empty(5, 3).normal_())


# --- on a GPU (pytest -m gpu on a machine with CUDA; skipped with the reason elsewhere) ----

@pytest.mark.gpu
@pytest.mark.parametrize("components", [("word",), ("word", "trigram"), ("lstm",), ("blstm",),
                                        ("gran",)])
def test_gpu_training_follows_the_cpu_loss_curve(tmp_path, components):
    """The same data, seed and settings on CUDA and on CPU: the same loss curve within float
    noise (batches assembled on the device; recurrent models over padded rows in passes
    sorted by length, scrambled by numbers drawn on the host), and the CUDA model encodes on the CPU to nearly the same vectors."""
    spec = ModelSpec(components=components, units="word", dim=16, hidden=16)
    runs = {}
    for dev in ("cuda", "cpu"):  # FP32 on both (tf32 off, as by default)
        settings = EmbedTrainSettings(epochs=4, batch_size=6, megabatch=2, device=dev, tf32=False)
        runs[dev] = train(PAIRS, tmp_path / f"{dev}.pt", spec, settings)
    assert runs["cuda"]["device"] == "cuda" and runs["cpu"]["device"] == "cpu"
    gpu, cpu = ([h["loss"] for h in runs[d]["history"]] for d in ("cuda", "cpu"))
    assert gpu == pytest.approx(cpu, rel=2e-2, abs=1e-3)
    assert gpu[-1] < gpu[0]
    texts = [a for a, _ in PAIRS[:6]]
    a = load_model(tmp_path / "cuda.pt", "cpu").encode(texts)
    b = load_model(tmp_path / "cpu.pt", "cpu").encode(texts)
    assert np.abs(a - b).max() < 5e-2


@pytest.mark.gpu
def test_gpu_tf32_training_takes_tf32_matrix_products_and_follows_the_fp32_curve(tmp_path, monkeypatch):
    """embed.train.tf32 on CUDA: the epochs run with cuBLAS's TF32 allowed (and torch's setting
    is as before afterwards); GRAN's loss curve stays that of full FP32 within TF32's noise."""
    import paramill.embed.train as training

    seen, real = [], training._epoch
    monkeypatch.setattr(training, "_epoch", lambda *a, **k: seen.append(
        torch.backends.cuda.matmul.allow_tf32) or real(*a, **k))
    spec = ModelSpec(components=("gran",), units="word", dim=16, hidden=16)
    runs = {tf32: train(PAIRS, tmp_path / f"{tf32}.pt", spec, EmbedTrainSettings(
        epochs=4, batch_size=6, megabatch=2, device="cuda", tf32=tf32)) for tf32 in (True, False)}
    assert seen == [True] * 4 + [False] * 4 and torch.backends.cuda.matmul.allow_tf32 is False
    tf32, fp32 = ([h["loss"] for h in runs[k]["history"]] for k in (True, False))
    assert tf32 == pytest.approx(fp32, rel=2e-2, abs=1e-3) and tf32[-1] < tf32[0]


@pytest.mark.gpu
def test_gpu_encoding_a_batch_out_of_cuda_memory_goes_on_at_half_the_size(tmp_path):
    """A real CUDA out-of-memory error while encoding (the process held to 32 MiB of the
    card beyond what it holds, a batch of 32,768 long sentences asking for more): the batch
    is encoded again at half the size until it fits, the rest at that size, and the vectors
    are those of the CPU."""
    spec = ModelSpec(components=("word",), units="word", dim=256)
    train(PAIRS, tmp_path / "m.pt", spec, EmbedTrainSettings(epochs=1, batch_size=6, device="cpu"))
    model = load_model(tmp_path / "m.pt", "cuda")
    sentences = [" ".join([a] * 40) for a, _ in PAIRS] * (32768 // len(PAIRS) + 1)
    sentences = sentences[:32768]
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_allocated() + (32 << 20)) / total)
    try:
        got = model.encode(sentences, batch_size=len(sentences), command="embed encode")
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
    halved = model.out_of_gpu_memory
    assert halved and halved[0] == {"at": "sentence 1", "batch_size": 32768, "now": 16384}
    assert got.shape == (32768, 256)
    expected = load_model(tmp_path / "m.pt", "cpu").encode(sentences[:64] + sentences[-64:])
    assert np.allclose(np.concatenate([got[:64], got[-64:]]), expected, atol=1e-4)


@pytest.mark.gpu
def test_gpu_a_model_larger_than_the_card_is_refused_before_any_weight_is_on_it(tmp_path):
    """``dim`` 1,000,000,000 on CUDA: the card's own memory is the limit (not the host's), and
    the error comes before anything is allocated on the card."""
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    spec = ModelSpec(components=("word",), units="word", dim=1_000_000_000)
    name = torch.cuda.get_device_properties(0).name
    with pytest.raises(ValueError, match=rf"more than the [\d.,]+ GiB of the memory of the GPU \({re.escape(name)}\)"):
        train(PAIRS, tmp_path / "m.pt", spec, EmbedTrainSettings(epochs=1, batch_size=6, device="cuda"))
    assert torch.cuda.memory_allocated() == before


@pytest.mark.gpu
@pytest.mark.parametrize("components, graph", [(("word",), {}), (("word", "lstm"), {}),
                                               (("gran",), {"recurrent_cuda_graph": True,
                                                            "recurrent_pass_rows": 24, "tf32": True})])
def test_gpu_training_resumes_on_cuda(tmp_path, components, graph):
    """Two epochs, then a third from the checkpoint, on CUDA: the model three epochs in one
    go gives (deterministic kernels, the same data order and generator states); GRAN also
    replayed from its graphs (recorded again by the resumed run) in TF32, the settings of its
    speed goal."""
    spec = ModelSpec(components=components, units="word", dim=8, hidden=8)
    settings = dict(batch_size=6, megabatch=2, device="cuda", **graph)
    whole = train(PAIRS, tmp_path / "a.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=2, **settings))
    resumed = train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    assert resumed["device"] == "cuda" and [h["epoch"] for h in resumed["history"]] == [1, 2, 3]
    assert [h["loss"] for h in resumed["history"]] == pytest.approx(
        [h["loss"] for h in whole["history"]], rel=1e-5)
    a = torch.load(tmp_path / "a.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


@pytest.mark.gpu
@pytest.mark.parametrize("components, graph", [(("word",), {}), (("gran",), {"recurrent_cuda_graph": True})])
def test_gpu_a_run_killed_within_an_epoch_resumes_on_cuda(tmp_path, monkeypatch, components, graph):
    """On CUDA (WORD replayed from its graph, GRAN from its graphs): a checkpoint within an
    epoch (the running loss read back from the card), a run killed after it, and the resumed
    run gives the losses and weights of a run never stopped (deterministic kernels)."""
    from paramill.embed.resume import Checkpoints

    class Killed(Exception):
        pass

    real = Checkpoints.after

    def every_megabatch(self, epoch, buffers, offset, size, batches, pairs, total):
        self.last = float("-inf")
        real(self, epoch, buffers, offset, size, batches, pairs, total)
        if (epoch, buffers, offset) == (1, 1, 4):
            raise Killed

    monkeypatch.setattr("paramill.embed.train.CHUNK_PAIRS", 4)
    spec = ModelSpec(components=components, dim=8, hidden=8, units="word")
    settings = dict(batch_size=4, megabatch=1, buffer_pairs=8, device="cuda", **graph)
    whole = train(PAIRS, tmp_path / "a.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    monkeypatch.setattr(Checkpoints, "after", every_megabatch)
    with pytest.raises(Killed):
        train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    monkeypatch.setattr(Checkpoints, "after", real)
    assert torch.load(tmp_path / "b.pt.resume.pt", weights_only=True)["within_epoch"]["offset"] == 4
    resumed = train(PAIRS, tmp_path / "b.pt", spec, EmbedTrainSettings(epochs=3, **settings))
    assert resumed["device"] == "cuda" and [h["loss"] for h in resumed["history"]] == pytest.approx(
        [h["loss"] for h in whole["history"]], rel=1e-5)
    a = torch.load(tmp_path / "a.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


@pytest.mark.gpu
def test_gpu_the_padding_of_a_flat_run_changes_no_sum_and_no_gradient():
    """On CUDA, where ``embedding_bag``'s backward pass sorts the ids and sums each id's
    places in chunks: a run padded far past its ids (as CUDA's bound pads a step), its
    padding spread over spare ids in bags of its own, gives the rows' sums and the
    embeddings' gradient of the run padded to its ids alone."""
    from paramill.embed.buffer import Buffer
    from paramill.embed.model import Averaging

    rng = np.random.default_rng(11)
    sentences = [rng.integers(1, 3000, int(rng.integers(0, 40))).tolist() for _ in range(400)]
    buffer = Buffer(pa.table({"u_1": pa.array(sentences[:200], pa.list_(pa.int32())),
                              "u_2": pa.array(sentences[200:], pa.list_(pa.int32()))}), ["u"])
    buffer.place("cuda")
    rows = rng.permutation(400)
    layer = Averaging(3000, 32).to("cuda")
    weights = torch.randn(400, 32, device="cuda")
    got = []
    for sizes in (None, {"u": 40_000}):
        run = buffer.flat_runs(rows, sizes, 1)["u"]
        layer.zero_grad()
        out = layer(*(part[0] for part in run))
        (out * weights).sum().backward()
        got.append((out.detach(), layer.embedding.weight.grad.clone()))
    assert torch.allclose(got[0][0], got[1][0], atol=1e-6)
    assert torch.allclose(got[0][1], got[1][1], atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("components", [("word",), ("word", "trigram")])
def test_gpu_graph_step_trains_as_the_eager_step_on_cuda(tmp_path, monkeypatch, components):
    """``cuda_graph: true`` on CUDA: the step recorded once and replayed gives the eager
    step's losses and weights (and it did replay)."""
    from paramill.embed import train as train_mod

    steps = []
    stepper = train_mod._stepper
    monkeypatch.setattr(train_mod, "_stepper", lambda *a: steps.append(stepper(*a)) or steps[-1])
    pairs = [(f"{a} {i}", f"{b} {i}") for i in range(30) for a, b in PAIRS]
    spec = ModelSpec(components=components, dim=16, units="word")
    runs = {}
    for graph in (False, True):
        settings = EmbedTrainSettings(epochs=3, batch_size=10, megabatch=4, device="cuda",
                                      cuda_graph=graph)
        runs[graph] = train(pairs, tmp_path / f"{graph}.pt", spec, settings)
    assert type(steps[0]).__name__ == "EagerStep" and type(steps[1]).__name__ == "GraphStep"
    assert steps[1].replays > 0 and steps[1].captures >= 1
    assert [h["loss"] for h in runs[True]["history"]] == pytest.approx(
        [h["loss"] for h in runs[False]["history"]], rel=1e-4)
    a = torch.load(tmp_path / "False.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "True.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(a[k], b[k], atol=1e-4) for k in a)


@pytest.mark.gpu
@pytest.mark.parametrize("components", [("gran",), ("lstm",), ("blstm",)])
def test_gpu_recurrent_graph_step_trains_as_the_eager_step_on_cuda(tmp_path, monkeypatch, components):
    """``recurrent_cuda_graph: true`` on CUDA (one pass a step). Step by step, on the same
    padded inputs, the replayed step gives the eager step's losses and weights (the same
    kernels, launched from the graph: graphs of two widths, warm-up steps included); whole
    training runs, whose eager steps run at exact widths and the graph's at padded ones,
    follow the same loss curve within float noise (as CUDA follows the CPU), and the graph's
    run did replay and reports its recordings and its peak memory."""
    from paramill.embed import train as train_mod
    from paramill.embed.graphstep import WARMUP_STEPS, EagerStep, PassGraphStep, room
    from paramill.embed.train import adam

    spec = ModelSpec(components=components, dim=16, hidden=16, units="word")
    sentences = [s for pair in PAIRS for s in pair]
    torch.manual_seed(0)
    models = [build(spec, sentences).to("cuda").train() for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    eager = EagerStep(models[0], adam(models[0], 1e-2), 0.4, 1.0, "cuda")
    graph = PassGraphStep(models[1], adam(models[1], 1e-2, capturable=True), 0.4, 1.0, "cuda", rows=8)
    ids, lengths = models[0].tensors(models[0].units(sentences[:8]))["word"]
    assert ids.size(1) <= 9
    order = torch.randperm(8, generator=torch.Generator().manual_seed(0)).to("cuda")
    for k in range(WARMUP_STEPS + 4):
        width = (12, 9)[k % 2]  # two widths (past the rows' longest), so two graphs
        wide = torch.zeros(8, width, dtype=ids.dtype)
        wide[:, :ids.size(1)] = ids
        one = {"word": (wide.cuda(), lengths.cuda())}
        padded = torch.zeros(8, room(width, least=8), dtype=ids.dtype, device="cuda")
        padded[:, :width] = one["word"][0]
        eager([{"word": (padded, one["word"][1])}], order)
        graph([one], order)
    assert graph.replays == 4 and len(graph.graphs) == 2 and graph.captures == 2
    assert torch.allclose(eager.total, graph.total, rtol=1e-6)
    a, b = models[0].state_dict(), models[1].state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)

    steps = []
    stepper = train_mod._stepper
    monkeypatch.setattr(train_mod, "_stepper", lambda *a: steps.append(stepper(*a)) or steps[-1])
    pairs = [(f"{a} {i}", f"{b} {i}") for i in range(30) for a, b in PAIRS]
    base = EmbedTrainSettings(epochs=3, batch_size=10, megabatch=4, device="cuda",
                              recurrent_pass_rows=40)
    runs = {graph: train(pairs, tmp_path / f"{graph}.pt", spec,
                         dataclasses.replace(base, recurrent_cuda_graph=graph))
            for graph in (False, True)}
    assert type(steps[0]).__name__ == "EagerStep" and type(steps[1]).__name__ == "PassGraphStep"
    assert steps[1].replays > 0 and steps[1].captures >= 1 and runs[True]["cuda_graph"]
    assert runs[True]["graph_recordings"] == steps[1].captures <= len(steps[1].graphs)
    assert runs[True]["cuda_peak_mb"] > 0 and runs[False]["cuda_peak_mb"] > 0
    curves = [[h["loss"] for h in runs[g]["history"]] for g in (True, False)]
    assert curves[0] == pytest.approx(curves[1], rel=2e-2, abs=1e-3) and curves[0][-1] < curves[0][0]


@pytest.mark.gpu
@pytest.mark.parametrize("components", [("word",), ("word", "trigram"), ("lstm",), ("blstm",),
                                        ("gran",)])
def test_gpu_a_step_never_waits_for_the_device(components):
    """CUDA's own check (``set_sync_debug_mode("error")``: any operation that makes the host
    wait for the device raises), under deterministic algorithms as training runs: a step,
    recurrent passes and their scrambling included, queues its work and returns; so does an
    averaging model's whole mega-batch: its pool encoded, the hardest-negative search (the
    H200's profile counted six waits a mega-batch: ``sims[i, i] = -inf`` copied its number
    with a blocking copy), its steps assembled from the negatives left on the device at the
    host's bound, and the steps; and a look at the running loss (:class:`LossPeek`)."""
    from paramill.run import device
    from paramill.embed.buffer import Buffer, to_device
    from paramill.embed.megabatch import LossPeek, averaging_steps, negatives, scramble
    from paramill.embed.graphstep import EagerStep
    from paramill.embed.train import adam

    spec = ModelSpec(components=components, dim=16, hidden=16, units="word")
    model = build(spec, [s for pair in PAIRS for s in pair]).to("cuda").train()
    step = EagerStep(model, adam(model, 1e-3), 0.4, 1.0, "cuda")
    peek = LossPeek(step.total)
    feats = model.tensors(model.units([s for pair in PAIRS[:2] for s in pair] * 2))
    order = to_device(torch.tensor([4, 5, 6, 7, 0, 1, 2, 3]), "cuda")
    units = sorted(model.vocabs)
    buffer = Buffer(pa.table({f"{u}_{side + 1}": [model.vocabs[u].ids(model.featurizers[u](p[side]))
                                                  for p in PAIRS]
                              for u in units for side in (0, 1)}), units)
    e1, e2 = torch.randn(6, 8, device="cuda"), torch.randn(6, 8, device="cuda")
    links = to_device(torch.tensor([0, 0, 1, 2, 2, 3]), "cuda")
    idx = np.random.default_rng(0).permutation(buffer.n)[:13]  # two steps of 6, one of 1
    pool = np.concatenate([idx, buffer.n + idx])
    deterministic = (torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled())
    device.deterministic()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    shown = []
    try:
        buffer.place("cuda")
        for k in range(3):
            if model.spec.recurrent:
                ids, lengths = feats["word"]
                step([{"word": (scramble(ids[k:k + 4], lengths[k:k + 4], 0.5), lengths[k:k + 4])}
                      for k in (0, 4)], order)
            else:
                step(feats)
                negs = negatives(model, buffer, pool, spec, "cuda", np.arange(13) % 5 if k else None)
                for runs, count in averaging_steps(buffer, idx, pool, negs, 6, step):
                    step.over(runs, count)
            shown.append(peek(k + 1))
            found = [torch.stack(hardest_negatives(e1, e2, use)) for use in (None, links)]
    finally:
        torch.cuda.set_sync_debug_mode("default")
        torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
    assert step.total.item() > 0 and shown[0] is None
    assert all(value is None or value > 0 for value in shown)
    assert [f.cpu().tolist() for f in found] == [
        [t.tolist() for t in hardest_negatives(e1.cpu(), e2.cpu(), use)] for use in (None, links.cpu())]


@pytest.mark.gpu
@pytest.mark.parametrize("components, graph", [(("word", "trigram"), False), (("word",), True),
                                               (("gran",), False), (("gran",), True)])
def test_gpu_an_epoch_waits_for_the_device_once_or_once_a_megabatch(tmp_path, monkeypatch,
                                                                    components, graph):
    """CUDA's own count (``set_sync_debug_mode("warn")``: a warning each time the host waits
    for the device) over whole epochs of training on CUDA: an averaging model's epoch, eager
    or replayed from a CUDA graph (recording it aside), waits once, for the epoch's loss at
    its end, so the host queues mega-batch after mega-batch; a recurrent model's also once a
    mega-batch, for the negatives that set its passes, eager or replayed (one pass a step)."""
    import warnings

    from paramill.embed import train as train_mod
    from paramill.embed.graphstep import ReplayedStep

    epoch, record, seen = train_mod._epoch, ReplayedStep._record, []

    def quiet_record(self, fn):  # recording a graph waits by design, rarely
        torch.cuda.set_sync_debug_mode("default")
        try:
            return record(self, fn)
        finally:
            torch.cuda.set_sync_debug_mode("warn")

    def counted(*args, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                result = epoch(*args, **kwargs)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        seen.append(sum("synchronizing" in str(w.message) for w in caught))
        return result

    monkeypatch.setattr(train_mod, "_epoch", counted)
    monkeypatch.setattr(ReplayedStep, "_record", quiet_record)
    pairs = [(f"{a} {i}", f"{b} {i}") for i in range(3) for a, b in PAIRS]  # 90 pairs
    settings = EmbedTrainSettings(epochs=2, batch_size=10, megabatch=4, device="cuda",
                                  cuda_graph=graph, recurrent_cuda_graph=graph,
                                  recurrent_pass_rows=40 if graph else 0)  # 3 mega-batches an epoch
    summary = train(pairs, tmp_path / "m.pt", ModelSpec(components=components, dim=16, hidden=16,
                                                        units="word"), settings)
    assert summary["cuda_graph"] == graph and summary["history"][-1]["loss"] > 0
    assert seen == ([4, 4] if ModelSpec(components=components).recurrent else [1, 1])


def test_a_sentencepiece_store_is_mapped_by_one_lookup_a_model(tmp_path, monkeypatch):
    """Every epoch reads a store of SentencePiece's own ids through the model's piece ->
    vocabulary lookup: made once for the model (it took ~25 ms, a piece at a time), not once
    an epoch, and read-only, as every epoch shares it."""
    from paramill.embed import rawstore
    from paramill.embed.features import Featurizer

    made = []
    lookup = Featurizer.lookup
    monkeypatch.setattr(Featurizer, "lookup", lambda self, vocab: made.append(vocab) or lookup(self, vocab))
    spec = ModelSpec(units="sp", components=("word",), dim=4, sp_vocab_size=40)
    summary = train(PAIRS, tmp_path / "m.pt", spec, EmbedTrainSettings(epochs=3, batch_size=4))
    assert [h["epoch"] for h in summary["history"]] == [1, 2, 3] and len(made) == 1
    f = load_model(tmp_path / "m.pt", "cpu")
    shared = rawstore.piece_lookup(f.featurizers["sp"], f.vocabs["sp"])
    assert shared is rawstore.piece_lookup(f.featurizers["sp"], f.vocabs["sp"])
    assert not shared.flags.writeable and shared.tolist() == lookup(f.featurizers["sp"], f.vocabs["sp"]).tolist()


def test_sentencepiece_units_in_bulk_are_the_per_sentence_units(tmp_path):
    """The id store and the counts featurise SentencePiece units in bulk, as piece ids; a
    sentence gets the ids its pieces get one at a time (unknown characters and empty text
    included), and the counts are the pieces' counts without the unknown ones."""
    from collections import Counter

    from paramill.embed.featurise import _ids_column, chunk_counts
    from paramill.embed.model import build_from_counts, featurizers, sentencepiece_for

    spec = ModelSpec(units="sp", components=("word",), dim=4, sp_vocab_size=40)
    train_text = [x for p in PAIRS for x in p]
    proto = sentencepiece_for(spec, train_text)
    f = featurizers(spec, proto)["sp"]
    texts = ["The dog sleeps ☃☃ 雨.", "", "   ", "Ünïcode Straße", "ok", "The chef cooks lunch."]
    strings = Counter(u for t in texts for u in f(t))
    by_id, unknown = chunk_counts({"sp": f}, (texts[:3], texts[3:]))["sp"]
    assert f.counter(by_id) + unknown == strings
    assert any(u not in f.pieces for u in strings) and unknown  # text the model does not know
    for counted in (train_text, texts):  # unknown text out of the vocabulary, then in it
        model = build_from_counts(spec, {"sp": Counter(u for t in counted for u in f(t))}, proto)
        vocab = model.vocabs["sp"]
        column = _ids_column(vocab, f, texts).to_pylist()
        assert column == [vocab.ids(f(t)) for t in texts]
        assert column[1] == column[2] == [1]
    assert vocab.index["☃☃"] in column[0]


def test_the_sentencepiece_sample_is_seeded_and_bounded(tmp_path):
    import polars as pl

    pairs = [(f"first {i}", f"second {i}") for i in range(3000)]
    pl.DataFrame({"s1": [a for a, _ in pairs], "s2": [b for _, b in pairs]}).write_parquet(
        tmp_path / "p.parquet", row_group_size=500)
    (tmp_path / "p.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in pairs))
    parquet = PairSource.from_files([tmp_path / "p.parquet"], batch_rows=700)
    assert parquet.rows() == 3000 and PairSource.from_files([tmp_path / "p.tsv"]).rows() is None
    sample = list(parquet.sentences(1000, seed=13))
    assert 800 < len(sample) < 1200 and sample == list(parquet.sentences(1000, seed=13))
    assert sample != list(parquet.sentences(1000, seed=14))
    assert all(b == "second " + a.split()[1] for a, b in zip(sample[::2], sample[1::2]))  # whole pairs
    everything = [x for p in pairs for x in p]
    assert list(parquet.sentences(6000, seed=13)) == everything  # the sample is the corpus
    first = PairSource.from_files([tmp_path / "p.parquet"], max_pairs=400)  # max_pairs counts
    assert first.rows() == 400 and list(first.sentences(1000, seed=13)) == everything[:800]
    assert list(PairSource.from_files([tmp_path / "p.tsv"]).sentences(10, seed=13)) == everything
