/**
 * @file mini_json.h
 * @brief A small JSON reader for tests (RFC 8259 values: object, array, string, number,
 * true/false/null). parse() returns false on any syntax error, so a test can assert that
 * output is valid JSON before looking at fields.
 */
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace uroce::test {

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Json> arr;
  std::map<std::string, Json> obj;

  const Json& operator[](const std::string& k) const {
    static const Json kNone;
    auto it = obj.find(k);
    return it == obj.end() ? kNone : it->second;
  }
  const Json& operator[](size_t i) const {
    static const Json kNone;
    return i < arr.size() ? arr[i] : kNone;
  }
  bool has(const std::string& k) const { return obj.count(k) != 0; }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  bool parse(Json* out) {
    if (!value(out)) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool lit(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool string(std::string* out) {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        char e = s_[i_++];
        switch (e) {
          case 'n': *out += '\n'; break;
          case 't': *out += '\t'; break;
          case 'r': *out += '\r'; break;
          case 'b': *out += '\b'; break;
          case 'f': *out += '\f'; break;
          case 'u':
            if (i_ + 4 > s_.size()) return false;
            *out += static_cast<char>(std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16));
            i_ += 4;
            break;
          case '"':
          case '\\':
          case '/': *out += e; break;
          default: return false;
        }
      } else {
        *out += c;
      }
    }
    if (i_ >= s_.size()) return false;
    ++i_;
    return true;
  }
  bool value(Json* v) {
    ws();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') {
      v->type = Json::kObject;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      for (;;) {
        ws();
        std::string k;
        if (!string(&k)) return false;
        ws();
        if (i_ >= s_.size() || s_[i_++] != ':') return false;
        Json m;
        if (!value(&m)) return false;
        v->obj[k] = std::move(m);
        ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
        return false;
      }
    }
    if (c == '[') {
      v->type = Json::kArray;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
      for (;;) {
        Json m;
        if (!value(&m)) return false;
        v->arr.push_back(std::move(m));
        ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
        return false;
      }
    }
    if (c == '"') {
      v->type = Json::kString;
      return string(&v->str);
    }
    if (lit("true")) {
      v->type = Json::kBool;
      v->b = true;
      return true;
    }
    if (lit("false")) {
      v->type = Json::kBool;
      return true;
    }
    if (lit("null")) return true;
    const char* start = s_.c_str() + i_;
    char* end = nullptr;
    v->num = std::strtod(start, &end);
    if (end == start) return false;
    v->type = Json::kNumber;
    i_ += static_cast<size_t>(end - start);
    return true;
  }

  const std::string& s_;
  size_t i_ = 0;
};

inline bool parse_json(const std::string& s, Json* out) { return JsonParser(s).parse(out); }

}  // namespace uroce::test
