"""The 2-way workload: plan, tile, merge of every pair of vectors (snp, hamming, ibs, king, ccc2)."""
