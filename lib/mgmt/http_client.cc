/**
 * @file http_client.cc
 * @brief perform_all on libcurl's multi interface (see http_client.h).
 */
#include "mgmt/http_client.h"

#include <curl/curl.h>

#include <mutex>

namespace uroce::mgmt {

namespace {

constexpr size_t kMaxBody = 16u << 20;

size_t on_data(char* p, size_t size, size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  const size_t len = size * n;
  if (s->size() + len > kMaxBody) return 0;  // aborts the transfer
  s->append(p, len);
  return len;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Easy {
  CURL* h = nullptr;
  curl_slist* headers = nullptr;
  size_t index = 0;
};

Easy make(const Call& c, uint32_t timeout_ms, Result* r, size_t index) {
  Easy e;
  e.index = index;
  e.h = curl_easy_init();
  curl_easy_setopt(e.h, CURLOPT_URL, c.url.c_str());
  curl_easy_setopt(e.h, CURLOPT_CUSTOMREQUEST, c.method.c_str());
  curl_easy_setopt(e.h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(e.h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e.h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, &on_data);
  curl_easy_setopt(e.h, CURLOPT_WRITEDATA, &r->body);
  if (c.method == "HEAD") curl_easy_setopt(e.h, CURLOPT_NOBODY, 1L);
  if (!c.body.empty() || (c.method != "GET" && c.method != "HEAD")) {
    e.headers = curl_slist_append(e.headers, "Content-Type: application/json");
    curl_easy_setopt(e.h, CURLOPT_POSTFIELDS, c.body.c_str());
    curl_easy_setopt(e.h, CURLOPT_POSTFIELDSIZE, static_cast<long>(c.body.size()));
  }
  if (!c.token.empty())
    e.headers = curl_slist_append(e.headers, ("Authorization: Bearer " + c.token).c_str());
  if (e.headers) curl_easy_setopt(e.h, CURLOPT_HTTPHEADER, e.headers);
  curl_easy_setopt(e.h, CURLOPT_PRIVATE, reinterpret_cast<char*>(index));
  return e;
}

void finish(Easy& e, CURLcode code, Result* r) {
  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(e.h, CURLINFO_RESPONSE_CODE, &status);
    r->status = static_cast<int>(status);
  } else {
    r->status = 0;
    r->error = curl_easy_strerror(code);
  }
  curl_slist_free_all(e.headers);
  curl_easy_cleanup(e.h);
  e = Easy{};
}

}  // namespace

std::vector<Result> perform_all(const std::vector<Call>& calls, uint32_t timeout_ms,
                                size_t parallel) {
  global_init();
  std::vector<Result> results(calls.size());
  std::vector<Easy> easy(calls.size());
  CURLM* m = curl_multi_init();
  curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(parallel ? parallel : 1));
  for (size_t i = 0; i < calls.size(); ++i) {
    easy[i] = make(calls[i], timeout_ms, &results[i], i);
    curl_multi_add_handle(m, easy[i].h);
  }
  int running = 0;
  do {
    curl_multi_perform(m, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      char* priv = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
      const size_t i = reinterpret_cast<size_t>(priv);
      curl_multi_remove_handle(m, msg->easy_handle);
      finish(easy[i], msg->data.result, &results[i]);
    }
    if (running) curl_multi_poll(m, nullptr, 0, 100, nullptr);
  } while (running);
  for (size_t i = 0; i < easy.size(); ++i)
    if (easy[i].h) {  // never reported done (cannot happen with running == 0; defensive)
      curl_multi_remove_handle(m, easy[i].h);
      finish(easy[i], CURLE_OPERATION_TIMEDOUT, &results[i]);
    }
  curl_multi_cleanup(m);
  return results;
}

Result perform(const Call& call, uint32_t timeout_ms) {
  return perform_all({call}, timeout_ms).front();
}

}  // namespace uroce::mgmt
