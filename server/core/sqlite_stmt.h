// Stmt: a prepared SQLite statement that finalizes itself, with typed binds and columns.
// Internal to the StateStore's files.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace accel::server {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Text(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  // A blob, never NULL (an empty string binds a zero-length blob).
  void Blob(int i, const std::string& s) {
    sqlite3_bind_blob(stmt_, i, s.empty() ? "" : s.data(), static_cast<int>(s.size()),
                      SQLITE_TRANSIENT);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Real(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  int Step() { return sqlite3_step(stmt_); }
  std::string ColText(int i) {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : "";
  }
  std::string ColBlob(int i) {
    const void* p = sqlite3_column_blob(stmt_, i);
    return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : "";
  }
  int64_t ColInt(int i) { return sqlite3_column_int64(stmt_, i); }
  double ColReal(int i) { return sqlite3_column_double(stmt_, i); }
  bool ColNull(int i) { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

}  // namespace accel::server
