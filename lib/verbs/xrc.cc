/**
 * @file xrc.cc
 * @brief XRC domains (ibv_open_xrcd(3), ibv_close_xrcd(3)) and XRC SRQ numbers
 * (ibv_get_srq_num(3)); XRC SRQs are made in srq_ah.cc, XRC QPs in qp.cc.
 *
 * A domain opened with fd -1 is private to its handle. One opened on a file is found again by
 * the file's (st_dev, st_ino) within the process, on any context of the same device: O_CREAT
 * creates it when there is none, O_EXCL fails (EINVAL) when there is one, neither fails
 * (EINVAL) when there is none, as the kernel's ib_uverbs_open_xrcd answers. Another process
 * opening the same file gets its own domain: a domain lives in the process's engine, and so do
 * the XRC SRQs and QPs in it (docs/limits.md, "XRC").
 */
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "verbs/objects.h"

namespace uroce::verbs {

ibv_xrcd* op_open_xrcd(ibv_context* c, ibv_xrcd_init_attr* a) {
  if (!c || !a) {
    errno = EINVAL;
    return nullptr;
  }
  if (a->comp_mask & ~uint32_t{IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS}) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (!(a->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ||
      (a->oflags & ~(O_CREAT | O_EXCL))) {
    errno = EINVAL;
    return nullptr;
  }
  auto x = std::make_unique<Xrcd>();
  if (a->fd != -1) {
    struct stat st;
    if (fstat(a->fd, &st) != 0) {
      errno = EBADF;
      return nullptr;
    }
    x->on_file = true;
    x->file = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  Context* ctx = ctx_of(c);
  Runtime* rt = ctx->rt;
  if (int err = rt->start()) {  // a deferred open (device::Runtime::open) opens the port here
    errno = err;
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> g(rt->mu);
    if (x->on_file) {
      auto it = rt->file_xrcds.find(x->file);
      if (it != rt->file_xrcds.end()) {
        if (a->oflags & O_EXCL) {
          errno = EINVAL;
          return nullptr;
        }
        x->id = it->second.id;
        it->second.opens++;
      } else if (!(a->oflags & O_CREAT)) {
        errno = EINVAL;
        return nullptr;
      }
    }
    if (x->id == 0) {
      auto r = rt->engine->alloc_xrcd();
      if (!r) {
        errno = r.status().code();
        return nullptr;
      }
      x->id = r.value();
      if (x->on_file) rt->file_xrcds[x->file] = Runtime::FileXrcd{x->id, 1};
    }
  }
  x->ctx = ctx;
  x->xrcd.context = c;
  Xrcd* p = x.release();
  ctx->track(ctx->xrcds, p);
  ctx->children++;
  return &p->xrcd;
}

int close_xrcd_locked(Runtime* rt, Xrcd* x) {
  if (x->on_file) {
    auto it = rt->file_xrcds.find(x->file);
    if (it != rt->file_xrcds.end() && it->second.opens > 1) {
      it->second.opens--;  // another handle still holds the domain
      return 0;
    }
  }
  if (Status s = rt->engine->dealloc_xrcd(x->id); !s) return s.code();
  if (x->on_file) rt->file_xrcds.erase(x->file);
  return 0;
}

int op_close_xrcd(ibv_xrcd* xd) {
  if (!xd) return EINVAL;
  Xrcd* x = from_ibv<Xrcd>(xd);
  Context* ctx = x->ctx;
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    if (int r = close_xrcd_locked(ctx->rt, x); r != 0) return r;
  }
  ctx->untrack(ctx->xrcds, x);
  ctx->children--;
  delete x;
  return 0;
}

int op_get_srq_num(ibv_srq* s, uint32_t* srq_num) {
  if (!s || !srq_num) return EINVAL;
  Srq* srq = from_ibv<Srq>(s);
  if (!srq->xrcd) return EINVAL;  // only XRC SRQs have a number requests can name
  *srq_num = srq->id;
  return 0;
}

}  // namespace uroce::verbs
