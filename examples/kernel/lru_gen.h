/* SPDX-License-Identifier: MIT */
/*
 * A self-contained model of the multi-gen LRU structures of the Linux kernel
 * (x86_64, CONFIG_LRU_GEN_STATS=n), written for cachelayout's examples and
 * tests from the facts in the kernel's struct lru_gen_folio. The field names, types and
 * offsets follow the kernel; the comments and everything else are ours.
 */
#ifndef _EXAMPLE_LRU_GEN_H
#define _EXAMPLE_LRU_GEN_H

#define SMP_CACHE_BYTES 64
#define __aligned(x) __attribute__((__aligned__(x)))
#define ____cacheline_aligned_in_smp __aligned(SMP_CACHE_BYTES)

#define MAX_NR_GENS 4
#define ANON_AND_FILE 2
#define MAX_NR_ZONES 5
#define MAX_NR_TIERS 4
#define NR_HIST_GENS 1
#define NR_LRU_LISTS 5

typedef _Bool bool;
typedef unsigned char u8;

typedef struct {
	long counter;
} atomic_long_t;

typedef struct {
	unsigned int rlock;
} spinlock_t;

struct list_head {
	struct list_head *next, *prev;
};

struct hlist_nulls_node {
	struct hlist_nulls_node *next, **pprev;
};

struct mem_cgroup;

/* the multi-gen LRU of one lruvec */
struct lru_gen_folio {
	/* the aging increments the youngest generation number */
	unsigned long max_seq;
	/* the eviction increments the oldest generation numbers */
	unsigned long min_seq[ANON_AND_FILE];
	/* the birth time of each generation in jiffies */
	unsigned long timestamps[MAX_NR_GENS];
	/* the multi-gen LRU lists, lazily sorted on eviction */
	struct list_head folios[MAX_NR_GENS][ANON_AND_FILE][MAX_NR_ZONES];
	/* the multi-gen LRU sizes, eventually consistent */
	long nr_pages[MAX_NR_GENS][ANON_AND_FILE][MAX_NR_ZONES];
	/* the exponential moving average of refaulted */
	unsigned long avg_refaulted[ANON_AND_FILE][MAX_NR_TIERS];
	/* the exponential moving average of evicted+protected */
	unsigned long avg_total[ANON_AND_FILE][MAX_NR_TIERS];
	/* can only be modified under the LRU lock */
	unsigned long protected[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];
	/* can be modified without holding the LRU lock */
	atomic_long_t evicted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];
	atomic_long_t refaulted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];
	/* whether the multi-gen LRU is enabled */
	bool enabled;
	/* the memcg generation this lru_gen_folio belongs to */
	u8 gen;
	/* the list segment this lru_gen_folio belongs to */
	u8 seg;
	/* per-node lru_gen_folio list for global reclaim */
	struct hlist_nulls_node list;
};

/* the LRU lists and statistics of one memcg on one node */
struct lruvec {
	struct list_head lists[NR_LRU_LISTS];
	spinlock_t lru_lock;
	unsigned long anon_cost;
	unsigned long file_cost;
	atomic_long_t nonresident_age;
	unsigned long refaults[ANON_AND_FILE];
	unsigned long flags;
	void *pgdat;
	unsigned long mm_state_seq[MAX_NR_GENS];
	struct lru_gen_folio lrugen;
	unsigned long mm_stats[11];
};

struct mem_cgroup_reclaim_iter {
	struct mem_cgroup *position;
	unsigned int generation;
};

/* per-node state of a memory cgroup; allocated with kmalloc */
struct mem_cgroup_per_node {
	struct mem_cgroup *memcg;
	void *lruvec_stats_percpu;
	void *lruvec_stats;
	void *shrinker_info;
	struct mem_cgroup_reclaim_iter iter;
	unsigned long lru_zone_size[MAX_NR_ZONES][ANON_AND_FILE];
	struct lruvec lruvec;
	/* written on every uncharge: keep it on its own line */
	unsigned long stat_cache[32] ____cacheline_aligned_in_smp;
};

#endif /* _EXAMPLE_LRU_GEN_H */
