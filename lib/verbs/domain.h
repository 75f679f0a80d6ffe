/**
 * @file domain.h
 * @brief Parent domains as the objects created through them see them (domain.cc has the verbs):
 * the use count that makes ibv_dealloc_pd EBUSY, and the custom allocator of
 * ibv_alloc_parent_domain(3) holding a QP's, CQ's or SRQ's own object.
 *
 * The memory a uroce QP, CQ or SRQ owns in the process is the object behind its handle (the
 * ibv_qp_ex, ibv_cq_ex or ibv_srq and the state around it); its queues live in the device's
 * engine, shared by every context. So the allocator is asked for that object: size, alignment
 * kAllocAlign, and a resource type of RDMA_DRIVER_UNKNOWN (0) in the upper 32 bits (uroce has no
 * rdma_driver_id) and kResQp / kResCq / kResSrq in the lower. IBV_ALLOCATOR_USE_DEFAULT takes
 * the default allocator; NULL fails the create with ENOMEM. The free callback gets back exactly
 * what alloc returned, when the object is destroyed (or its context closed).
 */
#pragma once

#include <cerrno>
#include <cstdint>
#include <new>

#include "verbs/objects.h"

namespace uroce::verbs {

inline constexpr uint64_t kResQp = 1;   ///< resource_type of a QP's object
inline constexpr uint64_t kResCq = 2;   ///< of a CQ's
inline constexpr uint64_t kResSrq = 3;  ///< of an SRQ's
inline constexpr size_t kAllocAlign = 64;

/// Counts an object created through p when p is a parent domain.
inline void hold_domain(ibv_pd* p) {
  Pd* pd = from_ibv<Pd>(p);
  if (pd->protection) pd->users++;
}
/// Undoes hold_domain.
inline void release_domain(ibv_pd* p) {
  Pd* pd = from_ibv<Pd>(p);
  if (pd->protection) pd->users--;
}

/// A new T, in memory from pd's custom allocator when pd is a parent domain that has one
/// (file comment); nullptr with errno ENOMEM when the allocator returns NULL, EINVAL when it
/// returns memory not aligned for T.
template <typename T>
T* new_obj(Pd* pd, uint64_t resource_type) {
  static_assert(alignof(T) <= kAllocAlign);
  if (pd && pd->alloc) {
    void* p = pd->alloc(&pd->pd, pd->pd_context, sizeof(T), kAllocAlign, resource_type);
    if (p != IBV_ALLOCATOR_USE_DEFAULT) {
      if (!p) {
        errno = ENOMEM;
        return nullptr;
      }
      if (reinterpret_cast<uintptr_t>(p) % alignof(T) != 0) {
        pd->free(&pd->pd, pd->pd_context, p, resource_type);
        errno = EINVAL;
        return nullptr;
      }
      T* o = new (p) T();
      o->mem_pd = pd;
      return o;
    }
  }
  return new T();
}

/// Destroys what new_obj made, giving custom memory back to its parent domain's free callback.
template <typename T>
void delete_obj(T* o, uint64_t resource_type) {
  Pd* pd = o->mem_pd;
  if (!pd) {
    delete o;
    return;
  }
  o->~T();
  pd->free(&pd->pd, pd->pd_context, o, resource_type);
}

}  // namespace uroce::verbs
