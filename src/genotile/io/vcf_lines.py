"""A block of VCF records, line by line: each record's first nine columns under the reader's
rules (readers/vcf.py: CHROM, FILTER, multiallelic records, variant IDs), and where its calls are.

`scan` splits each line's first nine columns in Python and finds the calls by byte offsets: a
GT-only line whose calls are all three characters has them at fixed offsets from the line's
end (the common case: one copy per line, `fixed`); otherwise the calls start after the
block's tabs (vcf_calls.CallDecoder). A record it does not handle raises HandOver.

A record on a contig the reader leaves out (`keep`, the names it reads; readers/vcf.py's first
rule) is counted (`non_autosomal_skipped`) before any other rule, as the cyvcf2 path does; its
calls are not decoded, but where it has GT they are checked as htslib would read them (vcf_calls:
`left_out` lists where they are), so that a record htslib refuses still goes to cyvcf2 to say so.
"""

from genotile.io.vcf_spans import TAB, HandOver


class Lines:
    """Per-record facts of one block, from each line's first nine columns."""

    def __init__(self):
        self.ss, self.le, self.fixed = [], [], []  # calls' start, line end, fixed width? (genotype records)
        self.alts = []  # ALT count of each genotype record
        self.ids = []  # variant IDs, one per output row (several for a split record)
        self.left_out: tuple[list, list] = ([], [])  # calls' start, line end of records left out by CHROM, with GT
        self.contigs: set[str] = set()  # the contigs of the records left out
        self.records = 0
        self.stats = dict.fromkeys(
            (
                "records",
                "no_gt_skipped",
                "filter_failed",
                "filter_skipped",
                "multiallelic_skipped",
                "multiallelic_split",
                "split_variants",
                "non_autosomal_skipped",
            ),
            0,
        )


def scan(
    buf: bytes,
    start: int,
    end: int,
    *,
    nf: int,
    skip_multiallelic: bool,
    filter_pass: bool,
    want_ids: bool,
    keep: frozenset[bytes] | None = None,
) -> Lines:
    """The rules of readers/vcf.py, per record, from the first nine columns (in Python), of the lines in
    [start, end) of buf; `nf` sample columns in the file; `keep`: the contigs read (None: every one)."""
    lines = Lines()
    st = lines.stats
    left_ss, left_le = lines.left_out
    left_contigs: set[bytes] = set()
    ss_l, le_l, fixed_l, alts_l, ids = lines.ss, lines.le, lines.fixed, lines.alts, lines.ids
    calls_len = 4 * nf  # a GT-only line of 3-character calls: its calls and the newline
    find, pos, n_rec = buf.find, start, 0
    while pos < end:
        le = find(b"\n", pos, end)
        n_rec += 1
        ss = le - calls_len + 1
        fixed = False
        if ss > pos and buf[ss - 1] == TAB:
            pre = buf[pos : ss - 1].split(b"\t")
            fixed = len(pre) == 9 and pre[8] == b"GT"
        if not fixed:
            pre = buf[pos:le].split(b"\t", 9)
            if len(pre) != 10:
                raise HandOver
            ss = le - len(pre[9])
            del pre[9]
        chrom, pos_txt, vid, ref, alt, _qual, filt, _info, fmt = pre
        pos = le + 1
        if not pos_txt.isdigit() or not chrom or chrom[0] == 35 or not vid or not ref or not alt:
            raise HandOver  # (htslib reads an empty ID, REF or ALT as '.')
        gt = fixed or fmt == b"GT" or fmt.startswith(b"GT:")
        if not gt and b"GT" in fmt.split(b":"):
            raise HandOver  # GT not the first key
        left = keep is not None and chrom not in keep  # the first rule: a contig left out
        if gt and (left or not fixed) and buf.count(b":", ss, le) > fmt.count(b":") * nf:
            # more subfields than FORMAT has keys (e.g. `0/1:5` under GT): htslib refuses the
            # record. (Counted per line: one call's extra field offset by another's missing
            # one is not seen here. A `fixed` line of the records read is checked as its
            # calls are decoded; those left out are not decoded)
            raise HandOver
        if left:
            st["non_autosomal_skipped"] += 1
            left_contigs.add(chrom)
            if gt:  # its calls checked in the worker (vcf_calls), not decoded
                left_ss.append(ss)
                left_le.append(le)
            continue
        if not gt:
            st["no_gt_skipped"] += 1
            continue
        if filt != b"PASS" and filt != b".":
            st["filter_failed"] += 1
            if filter_pass:
                st["filter_skipped"] += 1
                continue
        if b"," in alt:
            alts = alt.split(b",")
            if skip_multiallelic:
                st["multiallelic_skipped"] += 1
                continue
            st["multiallelic_split"] += 1
            st["split_variants"] += len(alts)
            n_alts = len(alts)
        else:
            n_alts = 0 if alt == b"." else 1
        if want_ids:
            try:
                if pos_txt[0] == 48:  # '0': a leading zero; the ID has the number
                    pos_txt = str(int(pos_txt)).encode()
                if n_alts > 1:
                    name = chrom + b":" + pos_txt + b":" + ref + b":"
                    ids.extend((name + a).decode() for a in alts)
                elif vid != b".":
                    ids.append(vid.decode())
                else:
                    ids.append((chrom + b":" + pos_txt + b":" + ref + b":" + alt).decode())
            except UnicodeDecodeError:
                raise HandOver from None
        else:
            ids.extend([None] * max(1, n_alts))
        ss_l.append(ss)
        le_l.append(le)
        fixed_l.append(fixed)
        alts_l.append(n_alts)
    lines.records = n_rec
    st["records"] = n_rec
    try:
        lines.contigs = {c.decode() for c in left_contigs}
    except UnicodeDecodeError:
        raise HandOver from None  # a CHROM that is not text: cyvcf2 says what it makes of it
    return lines
