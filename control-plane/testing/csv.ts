/**
 * A strict RFC 4180 reader for the tests, written apart from the export's writer so that each
 * checks the other: CRLF record ends, quoted fields with doubled quotes and any character inside.
 * Throws on what the RFC does not allow (a bare LF, a quote inside an unquoted field).
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  const fail = (why: string) => {
    throw new Error(`not RFC 4180 at character ${i}: ${why}`);
  };
  while (i < text.length) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) fail("unterminated quoted field");
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
    } else {
      while (i < text.length && text[i] !== "," && text[i] !== "\r" && text[i] !== "\n") {
        if (text[i] === '"') fail("a quote inside an unquoted field");
        field += text[i++];
      }
    }
    record.push(field);
    if (text[i] === ",") {
      i++;
    } else if (text.startsWith("\r\n", i)) {
      records.push(record);
      record = [];
      i += 2;
    } else {
      fail(i >= text.length ? "no CRLF after the last record" : "expected a comma or CRLF");
    }
  }
  return records;
}
