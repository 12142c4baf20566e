#!/usr/bin/env python3
"""Turns any UTF-8 text file into a corpus of repeated spans, on which a small model learns to copy:
an induction head (docs/inspecting.md, "An induction head you can see").

  tools/induction_corpus.py SOURCE OUT [--seed 1337] [--chars N] [--min_span 4] [--max_span 40]
                            [--random_fraction 0.5] [--segments FILE]
  tools/induction_corpus.py data/tinyshakespeare.txt out/induction_head/corpus.txt

OUT is a sequence of segments, each a span followed by a repeat of itself (span + span). A span is
either random characters drawn uniformly from SOURCE's own character set (with probability
random_fraction; nothing but copying predicts their second copy) or a passage of SOURCE at a random
place. Span lengths are uniform in [min_span, max_span]; segments follow each other with nothing in
between, so a repeat can start anywhere in a training window. The first segment is SOURCE's sorted
character set, repeated: OUT has exactly SOURCE's characters (the vocabulary `gpt heads` draws its
induction test from). OUT holds at least N characters (default: as many as SOURCE); its last segment
ends the file. --segments writes one line per segment, "offset<TAB>length<TAB>kind" (offset and the
span's length in characters, kind charset, random or text), for checking the repeats.

Deterministic given the seed: its own random generator (splitmix64), not Python's, so the output is
the same on every Python 3. Python 3 standard library only.
"""
import argparse
import sys

MASK = (1 << 64) - 1


class SplitMix64:
    """Steele, Lea and Flood 2014: a 64-bit state stepped by a constant, then mixed."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform in [0, n): rejection keeps it unbiased."""
        limit = (1 << 64) - (1 << 64) % n
        while True:
            x = self.next()
            if x < limit:
                return x % n

    def uniform(self):
        return (self.next() >> 11) / float(1 << 53)


def make_corpus(source, seed, chars, min_span, max_span, random_fraction):
    """Returns (text, segments): segments are (offset, span length, kind) tuples."""
    charset = "".join(sorted(set(source)))
    rng = SplitMix64(seed)
    pieces, segments, offset = [charset * 2], [(0, len(charset), "charset")], 2 * len(charset)
    while offset < chars:
        n = min_span + rng.below(max_span - min_span + 1)
        if rng.uniform() < random_fraction:
            span, kind = "".join(charset[rng.below(len(charset))] for _ in range(n)), "random"
        else:
            start = rng.below(len(source) - n + 1)
            span, kind = source[start : start + n], "text"
        pieces.append(span * 2)
        segments.append((offset, n, kind))
        offset += 2 * n
    return "".join(pieces), segments


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a UTF-8 text file")
    parser.add_argument("out", help="the corpus to write")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--chars", type=int, default=0, help="at least this many characters (0: as many as SOURCE)")
    parser.add_argument("--min_span", type=int, default=4)
    parser.add_argument("--max_span", type=int, default=40)
    parser.add_argument("--random_fraction", type=float, default=0.5)
    parser.add_argument("--segments", help="also write the segments' offsets, lengths and kinds here")
    args = parser.parse_args()

    # newline="" keeps the text's line endings as they are (no \r\n translation either way).
    with open(args.source, encoding="utf-8", newline="") as f:
        source = f.read()
    if not 1 <= args.min_span <= args.max_span or args.max_span > len(source):
        sys.exit(f"error: need 1 <= min_span <= max_span <= {len(source)} (the source's length)")
    if not 0.0 <= args.random_fraction <= 1.0:
        sys.exit("error: random_fraction must be in [0, 1]")
    chars = args.chars if args.chars > 0 else len(source)
    text, segments = make_corpus(source, args.seed, chars, args.min_span, args.max_span, args.random_fraction)
    with open(args.out, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    if args.segments:
        with open(args.segments, "w", encoding="utf-8") as f:
            for offset, n, kind in segments:
                f.write(f"{offset}\t{n}\t{kind}\n")
    print(f"{args.out}: {len(text)} characters, {len(segments)} repeated spans, "
          f"{len(set(source))} distinct characters (seed {args.seed})")


if __name__ == "__main__":
    main()
