// SPDX-License-Identifier: MIT
/* keymgr's KMS fetches of a batch's prepare phase, several at once (rot.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fctl/keys.h"
#include "fctl/rotation.h"
#include "rot.h"

struct fetch_pool {
	struct km_fetch *jobs;
	size_t n, next;
	pthread_mutex_t mu;
};

static void fetch_one(struct km_fetch *j)
{
	struct fctl_keyref r = j->l->ref;

	r.version = j->version;
	j->key = NULL;
	j->err[0] = 0;
	j->r = fctl_rotation_key_fetch(&r, j->l->base, fctl_cipher_key_len(j->l->cipher), &j->key,
				       j->err, sizeof(j->err));
}

static void *fetch_worker(void *arg)
{
	struct fetch_pool *p = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&p->mu);
		i = p->next < p->n ? p->next++ : p->n;
		pthread_mutex_unlock(&p->mu);
		if (i == p->n)
			return NULL;
		fetch_one(&p->jobs[i]);
	}
}

void km_fetch_keys(struct km *k, struct km_fetch *jobs, size_t n)
{
	struct fetch_pool p = { .jobs = jobs, .n = n };
	pthread_t th[KM_FETCH_THREADS];
	unsigned want = n < KM_FETCH_THREADS ? (unsigned)n : KM_FETCH_THREADS, started = 0;
	double t0 = km_now_ms();

	if (!n)
		return;
	pthread_mutex_init(&p.mu, NULL);
	/* this thread is one of the workers: want - 1 more */
	for (unsigned t = 0; t + 1 < want; t++)
		if (pthread_create(&th[t], NULL, fetch_worker, &p) == 0)
			started++;
	fetch_worker(&p);
	for (unsigned t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&p.mu);
	k->kms_ops += (unsigned)n;
	k->self_ms[KS_KMS] += km_now_ms() - t0;
}
