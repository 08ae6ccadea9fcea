import { describe, expect, it } from 'vitest';
import { namespacedTool, toolAllowed, toolPrefix } from './tool-names.js';

describe('tool names', () => {
  it('prefixes with the name when it is an identifier, else with the id', () => {
    expect(toolPrefix({ id: 'srv_1', name: 'search-v2_eu' })).toBe('search-v2_eu');
    expect(toolPrefix({ id: 'srv_1', name: 'my search' })).toBe('srv_1');
    expect(toolPrefix({ id: 'srv_1', name: 'x'.repeat(65) })).toBe('srv_1');
    expect(namespacedTool({ id: 'srv_1', name: 'files' }, 'read_file')).toBe('files__read_file');
  });

  it('matches globs where * is any run of characters and nothing else is special', () => {
    const list = ['search__*', 'files__read_*'];
    expect(toolAllowed(list, 'search__web')).toBe(true);
    expect(toolAllowed(list, 'search__')).toBe(true);
    expect(toolAllowed(list, 'files__read_file')).toBe(true);
    expect(toolAllowed(list, 'files__write_file')).toBe(false);
    expect(toolAllowed(list, 'xsearch__web')).toBe(false);
    expect(toolAllowed(['a.b__c'], 'aXb__c')).toBe(false);
    expect(toolAllowed(['a?__(c)'], 'a?__(c)')).toBe(true);
    expect(toolAllowed(['*'], 'anything__at_all')).toBe(true);
  });

  it('matches stars against names built to make a backtracking matcher hang, and compares UTF-16 units exactly', () => {
    const name = 'a'.repeat(5000);
    expect(toolAllowed([`${'*a'.repeat(60)}*b`], name)).toBe(false);
    expect(toolAllowed([`${'*a'.repeat(60)}*`], name)).toBe(true);
    expect(toolAllowed(['a*a*a*a'], 'aaa')).toBe(false);
    expect(toolAllowed(['a*a*a*a'], 'aaaa')).toBe(true);
    expect(toolAllowed(['**x**'], 'x')).toBe(true);
    expect(toolAllowed(['x'], 'x\n')).toBe(false);
    expect(toolAllowed(['*'], '')).toBe(true);
    expect(toolAllowed(['é__*'], 'é__tool')).toBe(true);
    expect(toolAllowed(['e__*'], 'é__tool')).toBe(false);
  });

  it('no list allows every tool; an empty list allows none', () => {
    expect(toolAllowed(null, 'a__b')).toBe(true);
    expect(toolAllowed(undefined, 'a__b')).toBe(true);
    expect(toolAllowed([], 'a__b')).toBe(false);
  });
});
