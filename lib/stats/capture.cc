/**
 * @file capture.cc
 * @brief The frame-capture ring (capture.h): file creation, mapping, the single-producer /
 * single-consumer slot protocol.
 */
#include "stats/capture.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace uroce::stats {

namespace {

constexpr size_t kHeaderBytes = (sizeof(CaptureHeader) + 63) & ~size_t{63};

uint32_t slot_bytes_for(uint32_t snaplen) {
  return static_cast<uint32_t>((sizeof(CaptureSlot) + snaplen + 63) & ~size_t{63});
}

CaptureHeader* header(void* base) { return static_cast<CaptureHeader*>(base); }

uint8_t* slot(void* base, uint64_t n) {
  const CaptureHeader* h = header(base);
  return static_cast<uint8_t*>(base) + kHeaderBytes + (n % h->slots) * h->slot_bytes;
}

uint64_t load_acquire(const uint64_t& f) { return __atomic_load_n(&f, __ATOMIC_ACQUIRE); }
void store_release(uint64_t& f, uint64_t v) { __atomic_store_n(&f, v, __ATOMIC_RELEASE); }

}  // namespace

std::string capture_path(const std::string& run_dir, std::string_view device, pid_t pid) {
  return run_dir + "/uroce." + std::string(device) + "." + std::to_string(pid) + ".cap";
}

// ---- writer (the program) --------------------------------------------------------------------

std::unique_ptr<CaptureWriter> CaptureWriter::attach(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < kHeaderBytes) {
    close(fd);
    return nullptr;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  const CaptureHeader* h = header(base);
  // The tool publishes magic last (release), so a half-initialised file is not taken.
  const bool ok = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == kCaptureMagic &&
                  h->version == kCaptureVersion && h->slots > 0 &&
                  h->slot_bytes == slot_bytes_for(h->snaplen) &&
                  kHeaderBytes + uint64_t{h->slots} * h->slot_bytes <= size;
  if (!ok) {
    munmap(base, size);
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<CaptureWriter>(new CaptureWriter(fd, base, size));
}

CaptureWriter::CaptureWriter(int fd, void* base, size_t size) : fd_(fd), base_(base), size_(size) {}

CaptureWriter::~CaptureWriter() {
  munmap(base_, size_);
  close(fd_);
}

void CaptureWriter::write(std::span<const uint8_t> frame, bool tx, uint64_t ts_ns) {
  CaptureHeader* h = header(base_);
  const uint64_t head = h->head;  // only this side writes it
  if (head - load_acquire(h->tail) >= h->slots) {
    __atomic_fetch_add(&h->dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  uint8_t* s = slot(base_, head);
  CaptureSlot meta{};
  meta.ts_ns = ts_ns;
  meta.len = static_cast<uint32_t>(frame.size());
  meta.caplen = static_cast<uint32_t>(std::min<size_t>(frame.size(), h->snaplen));
  meta.dir = tx ? 1 : 0;
  std::memcpy(s, &meta, sizeof meta);
  std::memcpy(s + sizeof meta, frame.data(), meta.caplen);
  store_release(h->head, head + 1);
}

bool CaptureWriter::wanted() const {
  struct stat st {};
  return fstat(fd_, &st) == 0 && st.st_nlink > 0;
}

// ---- reader (the tool) -----------------------------------------------------------------------

std::unique_ptr<CaptureReader> CaptureReader::create(const std::string& path, uint32_t slots,
                                                     std::string* err) {
  const uint32_t sb = slot_bytes_for(kCaptureSnaplen);
  const size_t size = kHeaderBytes + size_t{slots} * sb;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *err = path + ": cannot create the capture ring: " + std::strerror(errno);
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    *err = path + ": cannot size the capture ring: " + std::strerror(errno);
    close(fd);
    unlink(path.c_str());
    return nullptr;
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    *err = path + ": cannot map the capture ring: " + std::strerror(errno);
    unlink(path.c_str());
    return nullptr;
  }
  CaptureHeader* h = header(base);
  h->version = kCaptureVersion;
  h->slots = slots;
  h->slot_bytes = sb;
  h->snaplen = kCaptureSnaplen;
  __atomic_store_n(&h->magic, kCaptureMagic, __ATOMIC_RELEASE);
  return std::unique_ptr<CaptureReader>(new CaptureReader(path, base, size));
}

CaptureReader::CaptureReader(std::string path, void* base, size_t size)
    : path_(std::move(path)), base_(base), size_(size) {}

CaptureReader::~CaptureReader() {
  unlink(path_.c_str());
  munmap(base_, size_);
}

size_t CaptureReader::drain(
    const std::function<void(const CaptureSlot&, std::span<const uint8_t>)>& fn) {
  CaptureHeader* h = header(base_);
  const uint64_t head = load_acquire(h->head);
  uint64_t tail = h->tail;  // only this side writes it
  size_t n = 0;
  for (; tail != head; ++tail, ++n) {
    const uint8_t* s = slot(base_, tail);
    CaptureSlot meta;
    std::memcpy(&meta, s, sizeof meta);
    meta.caplen = std::min(meta.caplen, h->snaplen);  // never trust the other process
    fn(meta, std::span<const uint8_t>(s + sizeof meta, meta.caplen));
  }
  store_release(h->tail, tail);
  return n;
}

uint64_t CaptureReader::dropped() const {
  return __atomic_load_n(&header(base_)->dropped, __ATOMIC_RELAXED);
}

}  // namespace uroce::stats
