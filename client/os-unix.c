/* client/os-unix.c - what libringlog needs from a Unix system besides the
 * link to the daemon (transport-unix.c): shared memory and ids.
 *
 * Shared memory is a memfd sealed against shrinking and growing, so the
 * daemon can map it and know that no access inside the mapping can fault
 * with SIGBUS because the client truncated the file under it.
 */
#define _GNU_SOURCE
#include "lib.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A store to every page through this mapping, after MAP_POPULATE has
 * allocated them (os-win.c does the same). MAP_POPULATE fills the kernel's
 * page table, but where the hypervisor keeps shadow page tables (the VMs
 * this project's benchmarks ran on, 2026-11-29) the first store to each
 * page from this process still traps to it: with 1,000 writers in bursts
 * (bench-scale, 512 KiB rings), every 85th emit, the first on a new page
 * of ring, took 10-15 us, in each ring's first lap and not after, and
 * emit p99 was 9.8 us; with this, 0.95 us. The price is on the thread's
 * first event: there, +3 ms for a 1 MiB ring (1.2 -> 4.3 ms); on bare
 * metal or nested paging a TLB miss a page. 4096: the smallest page size;
 * larger pages are touched more than once. The memory is new and zero:
 * writing a zero changes nothing. */
static void touch_pages(void *m, size_t size)
{
	for (size_t off = 0; off < size; off += 4096)
		((volatile uint8_t *)m)[off] = 0;
}

int lib_shm_create(const char *name, size_t size, bool populate, lib_obj_t *obj, void **mem)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;
	void *m;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd,
		 0);
	if (m == MAP_FAILED)
		goto fail;
	if (populate)
		touch_pages(m, size);
	*obj = fd;
	*mem = m;
	return 0;
fail:
	err = -errno;
	close(fd);
	return err;
}

void lib_shm_destroy(lib_obj_t obj, void *mem, size_t size)
{
	/* Going now: without this the kernel marks every page accessed as it
	 * unmaps them (each moved on the LRU under its lock) just before the
	 * close frees them. 512 KiB: ~110 us to unmap and free, ~90 with it. */
	(void)madvise(mem, size, MADV_SEQUENTIAL);
	munmap(mem, size);
	close(obj);
}

uint32_t lib_tid(void)
{
	return (uint32_t)gettid();
}

uint32_t lib_pid(void)
{
	return (uint32_t)getpid();
}

void lib_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}
