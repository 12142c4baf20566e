#!/usr/bin/python3
"""Two Markdown tables from training runs' out_dirs (their config.json and metrics.jsonl, the files
`gpt report` draws): the validation loss of each evaluation against the tokens seen, and against
the seconds of training (the latest evaluation at or before each mark).
  tools/compare_runs.py [--minutes M] NAME=OUT_DIR NAME=OUT_DIR ...
"""
import argparse
import json
import os


def evaluations(out_dir):
    with open(os.path.join(out_dir, 'config.json')) as f:
        config = json.load(f)
    tokens_per_iter = config['batch_size'] * config['block_size'] * config['gradient_accumulation_steps']
    points = {}
    with open(os.path.join(out_dir, 'metrics.jsonl')) as f:
        for line in f:
            record = json.loads(line)
            if record.get('type') == 'eval':  # a resumed run's repeated evaluations count once
                points[record['iter']] = (record['iter'] * tokens_per_iter, record['elapsed_s'], record['val_loss'])
    return sorted(points.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('runs', nargs='+', help='NAME=OUT_DIR')
    parser.add_argument('--minutes', type=int, default=10, help='the last time mark (one row per minute)')
    args = parser.parse_args()
    names = [run.split('=', 1)[0] for run in args.runs]
    runs = [evaluations(run.split('=', 1)[1]) for run in args.runs]

    print('| tokens seen | ' + ' | '.join(f'{name} val loss' for name in names) + ' |')
    print('| --- |' + ' --- |' * len(names))
    for tokens in sorted({t for run in runs for t, _, _ in run}):
        cells = [next((f'{v:.4f}' for t, _, v in run if t == tokens), '') for run in runs]
        print(f'| {tokens / 1e6:.2f} M | ' + ' | '.join(cells) + ' |')
    print()
    print('| seconds | ' + ' | '.join(f'{name} val loss (tokens seen)' for name in names) + ' |')
    print('| --- |' + ' --- |' * len(names))
    for minute in range(1, args.minutes + 1):
        cells = []
        for run in runs:
            before = [(t, v) for t, s, v in run if s <= 60 * minute]
            cells.append(f'{before[-1][1]:.4f} ({before[-1][0] / 1e6:.2f} M)' if before else '')
        print(f'| {60 * minute} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
