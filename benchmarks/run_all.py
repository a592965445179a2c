"""Run every benchmark (blurxy, sgemm, lowering time) and print one summary table."""

from __future__ import annotations

import blurxy
import common
import lowering_time
import sgemm
from common import SummaryRow, print_summary


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0])
    rows: list[SummaryRow] = []
    rows += blurxy.run(args.reps)
    rows += sgemm.run(args.reps)
    rows += lowering_time.run(args.reps)
    rows += lowering_time.run_apps(args.reps)
    print_summary(rows)


if __name__ == "__main__":
    main()
