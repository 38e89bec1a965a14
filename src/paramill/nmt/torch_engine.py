"""The second decoding engine: the OpenNMT-py model itself, in torch, on any device torch
supports (a CUDA 13 GPU included, where CTranslate2 4.x cannot find CUDA 12's cuBLAS).

:class:`TorchTranslator` answers the calls paramill makes of a CTranslate2 translator, with
the same results: ``translate_batch`` (beam search with ``num_hypotheses`` best, minimum and
maximum length, length penalty; top-k sampling with ``suppress_sequences``) and
``score_batch`` (one log-probability per target piece plus end-of-sentence). Decoding keeps
the decoder's key/value cache (OpenNMT-py's own stepwise decoding) and drops the sources that
are done from the batch. Each step moves one small array of chosen tokens to the host.

Search, as CTranslate2's: the alive hypotheses of a source are its ``beam_size`` best
continuations that do not end the sentence; a continuation that ends it (end-of-sentence, or
the length limit) is finished. With ``length_penalty`` 0 a source is done when it has
``num_hypotheses`` finished and none alive scores better than the last of them (exact: a
hypothesis's log-probability only falls as it grows); with a length penalty, when
``beam_size`` are finished (CTranslate2's patience 1). On the sample's model the 1-best
matched CTranslate2's on 200 of 200 sentences at beam 12 without length penalty, and 198 of
200 with ``length_penalty`` 1; lower entries of an n-best list can differ where CTranslate2
stops earlier. Scores are the summed log-probability,
end-of-sentence included, divided by ``length ** length_penalty``; end-of-sentence is
masked before ``min_decoding_length`` pieces (the other probabilities are not renormalised,
so with ``length_penalty`` 0 the score is the model's exact log-probability:
:attr:`TorchTranslator.exact_scores`).

The model is read from the OpenNMT-py checkpoint that ``paramill nmt convert`` puts in the
bundle (:data:`CHECKPOINT`: weights, vocabularies and options, no optimizer state).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paramill.run.modelfiles import rebuilt_from
from paramill.nmt.checkpoints import CHECKPOINT, check_sizes, checkpoint_path, load_checkpoint

#: compute types of the CTranslate2 setting, as torch dtypes (int8 variants: their float part)
DTYPES = {"float16": "float16", "int8_float16": "float16", "bfloat16": "bfloat16",
          "int8_bfloat16": "bfloat16"}
NEG_INF = float("-inf")
#: rows (sources x samples) of one sampling batch
SAMPLE_ROWS = 4096


@dataclass
class TranslationResult:
    hypotheses: list[list[str]]
    scores: list[float] = field(default_factory=list)


@dataclass
class ScoringResult:
    tokens: list[str]
    log_probs: list[float]


class TorchTranslator:
    """An OpenNMT-py Transformer on ``device`` with CTranslate2's ``translate_batch`` and
    ``score_batch`` (the subset of options paramill uses)."""

    exact_scores = True  # with length_penalty 0, scores are exact log-probabilities

    def __init__(self, model_dir: str | Path, device: str = "cpu", compute_type: str = "default"):
        import torch

        from paramill.nmt.onmt_import import import_onmt

        import_onmt()
        from onmt.inputters.inputter import dict_to_vocabs
        from onmt.model_builder import build_base_model
        from onmt.utils.parse import ArgumentParser

        path = checkpoint_path(model_dir)
        if not path.is_file():
            raise FileNotFoundError(f"{model_dir} has no OpenNMT-py checkpoint ({CHECKPOINT}); "
                                    "paramill nmt convert writes one into each bundle")
        checkpoint = load_checkpoint(path)
        # options or vocabularies OpenNMT-py cannot build from (0 heads: ZeroDivisionError; a
        # head count that does not divide the model: AssertionError; a layer more or less than
        # the weights) are an error naming the file, not OpenNMT-py's traceback
        with rebuilt_from(path, "OpenNMT-py checkpoint", "its options not those of its weights"):
            opt = ArgumentParser.ckpt_model_opts(checkpoint["opt"])
            ArgumentParser.update_model_opts(opt)
            ArgumentParser.validate_model_opts(opt)
            opt.update_vocab = False
            opt.attention_dropout = 0.0
            vocabs = dict_to_vocabs(checkpoint["vocab"])
        self.device = torch.device(device)
        self.dtype = getattr(torch, DTYPES.get(compute_type, "float32"))
        check_sizes(path, opt, vocabs, checkpoint)
        with rebuilt_from(path, "OpenNMT-py checkpoint", "its options not those of its weights"):
            model = build_base_model(opt, vocabs)
            model.load_state_dict(checkpoint, precision=self.dtype, device=self.device, strict=True)
            model.eval()
            self.src_vocab: list[str] = list(checkpoint["vocab"]["src"])
            self.tgt_vocab: list[str] = list(checkpoint["vocab"]["tgt"])
            self._src_ids = {tok: i for i, tok in enumerate(self.src_vocab)}
            self._tgt_ids = {tok: i for i, tok in enumerate(self.tgt_vocab)}
            self.unk = {"src": self._src_ids["<unk>"], "tgt": self._tgt_ids["<unk>"]}
            self.src_pad = self._src_ids["<blank>"]
            self.tgt_pad = self._tgt_ids["<blank>"]
            self.bos = self._tgt_ids[checkpoint["vocab"].get("decoder_start_token", "<s>")]
            self.eos = self._tgt_ids["</s>"]
        for module in model.modules():
            if hasattr(module, "dropout_p"):
                module.dropout_p = 0.0
        self.model = model
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(0)

    # --- helpers ---------------------------------------------------------------------

    def seed(self, value: int) -> None:
        """Seed the sampler (CTranslate2: ``set_random_seed`` before the translator is made)."""
        self.generator.manual_seed(int(value))

    def _ids(self, pieces: list[str], side: str) -> list[int]:
        table = self._src_ids if side == "src" else self._tgt_ids
        return [table.get(p, self.unk[side]) for p in pieces]

    def _tensor(self, rows: list[list[int]], pad: int):
        import torch

        width = max(1, max(len(r) for r in rows))
        out = torch.full((len(rows), width), pad, dtype=torch.long)
        for i, row in enumerate(rows):
            out[i, :len(row)] = torch.tensor(row, dtype=torch.long)
        lengths = torch.tensor([max(1, len(r)) for r in rows], dtype=torch.long)
        return out.unsqueeze(-1).to(self.device), lengths.to(self.device)

    def _encode(self, sources: list[list[str]]):
        src, src_len = self._tensor([self._ids(s, "src") for s in sources], self.src_pad)
        enc_out, _, src_len = self.model.encoder(src, src_len)
        return src, enc_out, src_len

    def _log_probs(self, dec_out):
        import torch

        return torch.log_softmax(self.model.generator(dec_out).float(), dim=-1)

    @staticmethod
    def _chunks(items: list, size: int, batch_type: str = "examples") -> list[list[int]]:
        """Indices sorted by length (longest first), cut as CTranslate2 cuts a call's inputs:
        ``size`` items a chunk, or (``tokens``) as many as fit ``size`` padded (the chunk's
        longest item x its items), at least one; ``size`` 0: one chunk of all."""
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        if batch_type not in ("examples", "tokens"):
            raise ValueError(f"batch_type must be examples or tokens, not {batch_type!r}")
        if batch_type == "examples" or not size:
            size = size or len(order)
            return [order[i:i + size] for i in range(0, len(order), max(1, size))]
        chunks: list[list[int]] = []
        for i in order:
            if chunks and (len(chunks[-1]) + 1) * len(items[chunks[-1][0]]) <= size:
                chunks[-1].append(i)
            else:
                chunks.append([i])
        return chunks

    def _banned(self, suppress: list[list[str]] | None) -> tuple[list[int], list[tuple[tuple[int, ...], int]]]:
        """Single-piece sequences (never produced) and longer ones (their last piece is banned
        right after the rest)."""
        single, multi = [], []
        for seq in suppress or []:
            ids = self._ids(seq, "tgt")
            if len(ids) == 1:
                single.append(ids[0])
            elif ids:
                multi.append((tuple(ids[:-1]), ids[-1]))
        return single, multi

    # --- the CTranslate2 calls -------------------------------------------------------------

    def translate_batch(self, source: list[list[str]], beam_size: int = 2, num_hypotheses: int = 1,
                        return_scores: bool = False, length_penalty: float = 0.0,
                        max_decoding_length: int = 256, min_decoding_length: int = 1,
                        max_batch_size: int = 0, batch_type: str = "examples",
                        sampling_topk: int = 1, suppress_sequences: list[list[str]] | None = None,
                        **unused: Any) -> list[TranslationResult]:
        import torch

        if unused:
            raise TypeError(f"options the opennmt-py engine does not take: {sorted(unused)}")
        results: list[TranslationResult | None] = [None] * len(source)
        sampling = sampling_topk > 1 or (beam_size == 1 and num_hypotheses > 1)
        with torch.inference_mode():
            for chunk in self._chunks(source, max_batch_size, batch_type):
                sources = [source[i] for i in chunk]
                if sampling:
                    found = self._sample(sources, num_hypotheses, sampling_topk, max_decoding_length,
                                         min_decoding_length, [suppress_sequences or []] * len(sources))
                else:
                    found = self._beam(sources, beam_size, num_hypotheses, length_penalty,
                                       max_decoding_length, min_decoding_length, suppress_sequences)
                for i, hyps in zip(chunk, found):
                    results[i] = TranslationResult(
                        [[self.tgt_vocab[t] for t in h] for h, _ in hyps],
                        [s for _, s in hyps] if return_scores else [])
        return results  # type: ignore[return-value]

    def score_batch(self, source: list[list[str]], target: list[list[str]], max_batch_size: int = 0,
                    batch_type: str = "examples", **unused: Any) -> list[ScoringResult]:
        """Log-probability of each target piece and of end-of-sentence, given the source."""
        import torch

        if len(source) != len(target):
            raise ValueError(f"{len(source)} sources but {len(target)} targets")
        out: list[ScoringResult | None] = [None] * len(source)
        with torch.inference_mode():
            for chunk in self._chunks(source, max_batch_size, batch_type):
                src, enc_out, src_len = self._encode([source[i] for i in chunk])
                gold = [self._ids(target[i], "tgt") + [self.eos] for i in chunk]
                dec_in, _ = self._tensor([[self.bos] + g[:-1] for g in gold], self.tgt_pad)
                self.model.decoder.init_state(src, enc_out, None)
                dec_out, _ = self.model.decoder(dec_in, enc_out, src_len=src_len, step=None)
                logp = self._log_probs(dec_out)
                gold_t, _ = self._tensor(gold, self.tgt_pad)
                picked = logp.gather(-1, gold_t).squeeze(-1).cpu().numpy()
                for row, i in enumerate(chunk):
                    out[i] = ScoringResult(list(target[i]) + ["</s>"],
                                           picked[row, :len(gold[row])].astype(float).tolist())
        return out  # type: ignore[return-value]

    # --- beam search -------------------------------------------------------------------------

    def _mask(self, logp, step: int, min_len: int, bans, owner: np.ndarray, owner_t,
              history: np.ndarray) -> None:
        """Mask end-of-sentence before ``min_len`` pieces, and each row's suppressed sequences
        (``bans`` from :meth:`_suppression_index`; ``owner``/``owner_t``: each row's source
        index, on the host and on the device; ``history``: each row's pieces so far)."""
        if step < min_len:
            logp[:, self.eos] = NEG_INF
        mask, multi = bans
        if mask is not None:
            logp.masked_fill_(mask.index_select(0, owner_t), NEG_INF)
        for m, table in multi.items():
            if history.shape[1] < m:
                continue
            ban_rows, ban_tokens = [], []
            for row, (who, tail) in enumerate(zip(owner.tolist(), history[:, -m:].tolist())):
                for last in table.get((who, tuple(tail)), ()):
                    ban_rows.append(row)
                    ban_tokens.append(last)
            if ban_rows:
                logp[ban_rows, ban_tokens] = NEG_INF

    def _beam(self, sources, beam: int, n: int, lp: float, max_len: int, min_len: int,
              suppress) -> list[list[tuple[list[int], float]]]:
        import torch

        if n > beam:
            raise ValueError(f"num_hypotheses ({n}) cannot exceed beam_size ({beam})")
        count = len(sources)
        src, enc_out, src_len = self._encode(sources)
        rows = torch.arange(count, device=self.device).repeat_interleave(beam)
        src, enc_out, src_len = src[rows], enc_out[rows], src_len[rows]
        self.model.decoder.init_state(src, enc_out, None)
        alive = list(range(count))  # the sources still searched, in row-block order
        scores = torch.full((count, beam), NEG_INF, device=self.device)
        scores[:, 0] = 0.0
        tokens = torch.full((count * beam, 1, 1), self.bos, dtype=torch.long, device=self.device)
        history = np.zeros((count, beam, 0), dtype=np.int64)
        finished: list[list[tuple[float, list[int], float]]] = [[] for _ in range(count)]

        def norm(total: float, length: int) -> float:
            return total / (length ** lp) if lp else total

        for step in range(max_len):
            dec_out, _ = self.model.decoder(tokens, enc_out, src_len=src_len, step=step)
            logp = self._log_probs(dec_out.squeeze(1))  # (rows, V)
            if step == 0:  # one suppression list for the whole call: every row is "source" 0
                bans = self._suppression_index([suppress or []], logp.shape[-1])
            rows_now = logp.shape[0]
            self._mask(logp, step, min_len, bans, np.zeros(rows_now, dtype=np.int64),
                       torch.zeros(rows_now, dtype=torch.long, device=self.device),
                       history.reshape(rows_now, history.shape[2]))
            vocab = logp.shape[-1]
            total = (scores.reshape(-1, 1) + logp).reshape(len(alive), beam * vocab)
            top_s, top_i = total.topk(min(2 * beam, beam * vocab), dim=1)
            top_s, top_i = top_s.cpu().numpy(), top_i.cpu().numpy()  # the step's one sync
            origin, token = top_i // vocab, top_i % vocab
            last = step == max_len - 1
            keep_rows, keep_scores, keep_tokens, keep_hist, still = [], [], [], [], []
            for b, sent in enumerate(alive):
                picked: list[tuple[int, int, float]] = []
                for j in range(top_s.shape[1]):
                    s, o, t = float(top_s[b, j]), int(origin[b, j]), int(token[b, j])
                    if s == NEG_INF:
                        break
                    if t == self.eos:
                        hyp = history[b, o].tolist()
                        finished[sent].append((norm(s, len(hyp) + 1), hyp, s))
                    elif last:  # cut at the length limit: finished without end-of-sentence
                        hyp = history[b, o].tolist() + [t]
                        finished[sent].append((norm(s, len(hyp)), hyp, s))
                    else:
                        picked.append((o, t, s))
                    if len(picked) == beam:
                        break
                ranked = sorted(finished[sent], key=lambda f: -f[0])
                best_alive = norm(picked[0][2], step + 2) if picked else NEG_INF
                enough = (len(ranked) >= beam if lp else  # as CTranslate2 (patience 1)
                          len(ranked) >= n and ranked[n - 1][0] >= best_alive)
                if last or not picked or enough:
                    finished[sent] = ranked
                    continue
                while len(picked) < beam:  # fewer continuations than the beam: pad dead ones
                    picked.append((picked[0][0], picked[0][1], NEG_INF))
                still.append(sent)
                keep_rows.extend(b * beam + o for o, _, _ in picked)
                keep_scores.extend(s for _, _, s in picked)
                keep_tokens.extend(t for _, t, _ in picked)
                keep_hist.append(np.concatenate(
                    [history[b, [o for o, _, _ in picked]],
                     np.array([[t] for _, t, _ in picked], dtype=np.int64)], axis=1))
            if not still:
                break
            index = torch.tensor(keep_rows, dtype=torch.long, device=self.device)
            self.model.decoder.map_state(lambda state, dim: state.index_select(dim, index))
            enc_out, src_len = enc_out.index_select(0, index), src_len.index_select(0, index)
            scores = torch.tensor(keep_scores, device=self.device).reshape(len(still), beam)
            tokens = torch.tensor(keep_tokens, dtype=torch.long, device=self.device).reshape(-1, 1, 1)
            history = np.stack(keep_hist)
            alive = still
        return [[(hyp, score) for score, hyp, _ in sorted(f, key=lambda f: -f[0])[:n]]
                for f in finished]

    # --- top-k sampling ----------------------------------------------------------------------

    def sample_sets(self, sources: list[list[str]], suppressions: list[list[list[str]]], samples: int,
                    k: int, max_decoding_length: int = 256, min_decoding_length: int = 1,
                    max_rows: int = SAMPLE_ROWS) -> list[list[list[str]]]:
        """``samples`` top-k samples of each source under its own suppressed sequences, many
        sources in one batch (at most ``max_rows`` rows): what CTranslate2 can only do one
        source and constraint set per call, since its ``suppress_sequences`` holds for a
        whole call. Returns the samples' pieces per source, in input order."""
        import torch

        if len(sources) != len(suppressions):
            raise ValueError(f"{len(sources)} sources but {len(suppressions)} suppression sets")
        per_chunk = max(1, max_rows // max(1, samples))
        out: list[list[list[str]]] = []
        with torch.inference_mode():
            for at in range(0, len(sources), per_chunk):
                found = self._sample(sources[at:at + per_chunk], samples, k, max_decoding_length,
                                     min_decoding_length, suppressions[at:at + per_chunk])
                out.extend([[self.tgt_vocab[t] for t in h] for h, _ in hyps] for hyps in found)
        return out

    def _suppression_index(self, per_source: list[list[list[str]]], vocab: int):
        """Per source, its single-piece bans as a (sources, vocabulary) mask on the device,
        and its longer sequences as {length of prefix: {(source, prefix): [last pieces]}}."""
        import torch

        mask = None
        multi: dict[int, dict[tuple[int, tuple[int, ...]], list[int]]] = {}
        for src, seqs in enumerate(per_source):
            single, longer = self._banned(seqs)
            if single:
                if mask is None:
                    mask = torch.zeros((len(per_source), vocab), dtype=torch.bool, device=self.device)
                mask[src, single] = True
            for prefix, last in longer:
                multi.setdefault(len(prefix), {}).setdefault((src, prefix), []).append(last)
        return mask, multi

    def _sample(self, sources, n: int, k: int, max_len: int, min_len: int,
                per_source: list[list[list[str]]]) -> list[list[tuple[list[int], float]]]:
        """``n`` samples a source, each step drawn from the ``k`` most probable pieces, never
        completing a sequence of the source's ``per_source`` list."""
        import torch

        count = len(sources)
        src, enc_out, src_len = self._encode(sources)
        rows = torch.arange(count, device=self.device).repeat_interleave(n)
        src, enc_out, src_len = src[rows], enc_out[rows], src_len[rows]
        self.model.decoder.init_state(src, enc_out, None)
        owner = np.repeat(np.arange(count), n)  # the source of each alive row
        owner_t = rows
        history = np.zeros((count * n, 0), dtype=np.int64)
        totals = np.zeros(count * n)
        tokens = torch.full((count * n, 1, 1), self.bos, dtype=torch.long, device=self.device)
        found: list[list[tuple[list[int], float]]] = [[] for _ in range(count)]
        for step in range(max_len):
            dec_out, _ = self.model.decoder(tokens, enc_out, src_len=src_len, step=step)
            logp = self._log_probs(dec_out.squeeze(1))
            if step == 0:
                bans = self._suppression_index(per_source, logp.shape[-1])
            self._mask(logp, step, min_len, bans, owner, owner_t, history)
            top_s, top_i = logp.topk(min(k, logp.shape[-1]), dim=-1)
            choice = torch.multinomial(torch.softmax(top_s, dim=-1), 1, generator=self.generator)
            picked = top_i.gather(1, choice).squeeze(1)
            picked_logp = top_s.gather(1, choice).squeeze(1)
            picked, picked_logp = picked.cpu().numpy(), picked_logp.cpu().numpy()
            totals = totals + picked_logp
            ended = (picked == self.eos) | (step == max_len - 1)
            for row in np.nonzero(ended)[0]:
                hyp = history[row].tolist() + ([] if picked[row] == self.eos else [int(picked[row])])
                found[owner[row]].append((hyp, float(totals[row])))
            keep = np.nonzero(~ended)[0]
            if not len(keep):
                break
            index = torch.tensor(keep, dtype=torch.long, device=self.device)
            self.model.decoder.map_state(lambda state, dim: state.index_select(dim, index))
            enc_out, src_len = enc_out.index_select(0, index), src_len.index_select(0, index)
            owner_t = owner_t.index_select(0, index)
            history = np.concatenate([history[keep], picked[keep, None]], axis=1)
            totals, owner = totals[keep], owner[keep]
            tokens = torch.tensor(picked[keep], dtype=torch.long, device=self.device).reshape(-1, 1, 1)
        return found
