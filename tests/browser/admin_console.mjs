// The admin console in a real browser: an administrator signs in, uploads the example
// keyword spam filter, binds it with a configuration, tries it on a spammy sample (verdict
// disallow), sees an issue created through the API refused and the call counted on the hook's
// chart, gets a validation error for a bad setting, and blocks a user. A screenshot of each
// page goes to the screenshot directory, at desktop width, and the catalog at phone width.
//
// Usage: node tests/browser/admin_console.mjs <base-url> <admin> <password> <plugin.wasm>
//          <project-id> <author-token> <user-id-to-block> <screenshot-dir>
// Exits 0 when every step passed; prints what failed otherwise.

import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const [base, admin, password, wasm, projectId, authorToken, victimId, shots] = process.argv.slice(2);
if (!shots) {
  console.error('usage: admin_console.mjs <base-url> <admin> <password> <plugin.wasm> <project-id> <author-token> <user-id> <screenshot-dir>');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

function check(condition, message) {
  if (!condition) throw new Error(message);
  console.log(`ok - ${message}`);
}

async function shoot(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

let page = null;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();

  // Sign in and land on the console.
  await page.goto(`${base}/users/sign_in?redirect_to=/admin`);
  await page.getByLabel('Username or primary email').fill(admin);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/admin/plugins`);
  check(await page.getByRole('heading', { name: 'Plugins', exact: true }).isVisible(), 'signed in, on the plugins page');
  check(await page.getByText(`Signed in as ${admin}`).isVisible(), 'the signed-in administrator is shown');

  // A file that is not a component is refused with the reason next to the form.
  await page.getByLabel('Component (.wasm)').setInputFiles({ name: 'broken.wasm', mimeType: 'application/wasm', buffer: Buffer.from('nope') });
  await page.getByRole('button', { name: 'Upload plugin' }).click();
  await page.locator('#field_file_error').waitFor();
  check((await page.locator('#field_file_error').textContent()).includes('not a WebAssembly component'), 'an invalid .wasm shows why');

  // Upload the example plugin.
  await page.getByLabel('Component (.wasm)').setInputFiles(wasm);
  await page.getByLabel('Version (optional)').fill('1.0.0');
  await page.getByRole('button', { name: 'Upload plugin' }).click();
  await page.waitForURL(/\/admin\/plugins\/\d+\?done=(uploaded|known)/);
  check(await page.getByRole('heading', { name: /keyword.spam.filter/ }).isVisible(), 'uploaded, on the plugin page');
  const pluginUrl = page.url().split('?')[0];

  // Bind with a configuration the plugin refuses: its reason shows next to the field.
  await page.getByLabel('Configuration (JSON object)').first().fill('{"keywords": []}');
  await page.getByRole('button', { name: 'Save binding' }).click();
  await page.locator('#field_config_error').waitFor();
  const configError = await page.locator('#field_config_error').textContent();
  check(configError.includes('keywords must list at least one keyword'), 'an invalid config is refused with the plugin\'s reason');

  // Try the candidate on a spammy sample before binding it.
  const sample = JSON.stringify({
    title: 'Win the lottery today', description: 'Claim your prize',
    author: { id: 99, username: 'spammer', created_at: '2024-01-01T00:00:00Z' },
  }, null, 2);
  await page.goto(pluginUrl);
  const tryForm = page.locator('form[action$="/try"]');
  await tryForm.getByLabel('Configuration (JSON object)').fill('{"keywords": ["lottery"]}');
  await tryForm.getByLabel(/^Input/).fill(sample);
  await tryForm.getByRole('button', { name: 'Try it' }).click();
  await page.locator('#try-report').waitFor();
  const verdict = await page.locator('#try-verdict').textContent();
  check(verdict.includes('disallow'), 'tried on a spammy sample: disallow');
  const report = await page.locator('#try-report').textContent();
  check(/time: +[\d.]+ ms/.test(report) && report.includes('fuel:') && report.includes('memory:'), 'the report shows time, fuel and memory, as trellis plugin run');
  check(report.includes('keyword "lottery" found'), 'the report shows the plugin\'s log lines');
  await shoot(page, 'admin-plugin');

  // Bind it for real.
  await page.goto(pluginUrl);
  await page.locator('form[action$="/bind"]').getByLabel('Configuration (JSON object)').fill('{"keywords": ["lottery"]}');
  await page.getByLabel('Fail closed: refuse the request').check();
  await page.getByLabel('Time (ms)').fill('500');
  await page.getByRole('button', { name: 'Save binding' }).click();
  await page.waitForURL(`${base}/admin/hooks/spam_check?done=bound`);
  check(await page.getByText('The binding is saved and in effect.').isVisible(), 'bound to spam_check');
  check((await page.locator('#watch-calls').textContent()).trim() === '0', 'no calls counted yet (trials do not count)');

  // A real write through the API is refused by the plugin.
  const refused = await fetch(`${base}/api/v4/projects/${projectId}/issues`, {
    method: 'POST',
    headers: { 'PRIVATE-TOKEN': authorToken, 'Content-Type': 'application/json' },
    body: JSON.stringify({ title: 'Win the lottery', description: 'now' }),
  });
  check(refused.status === 400, `an issue created through the API is refused (${refused.status})`);
  const allowed = await fetch(`${base}/api/v4/projects/${projectId}/issues`, {
    method: 'POST',
    headers: { 'PRIVATE-TOKEN': authorToken, 'Content-Type': 'application/json' },
    body: JSON.stringify({ title: 'A real bug report' }),
  });
  check(allowed.status === 201, 'an honest issue goes through');

  // The calls are counted on the chart.
  await page.goto(`${base}/admin/hooks/spam_check`);
  check((await page.locator('#watch-calls').textContent()).trim() === '2', 'both calls counted on the chart');
  check(await page.locator('svg.chart rect.calls').count() >= 1, 'the chart draws the calls');
  const hookTry = page.locator('form[action$="/try"]');
  await hookTry.getByLabel(/^Input/).fill(sample);
  await hookTry.getByRole('button', { name: 'Try it' }).click();
  await page.locator('#try-report').waitFor();
  check((await page.locator('#try-verdict').textContent()).includes('disallow'), 'the bound plugin tried: disallow');
  await page.goto(`${base}/admin/hooks/spam_check`);
  await shoot(page, 'admin-hook');
  await page.goto(`${base}/admin/plugins`);
  await shoot(page, 'admin-plugins');

  // A setting with a bad value: the API's validation error, inline.
  await page.getByRole('link', { name: 'Settings', exact: true }).click();
  await page.waitForURL(`${base}/admin/settings`);
  await page.getByRole('link', { name: 'Visibility and access controls' }).click();
  await page.waitForURL(`${base}/admin/settings/visibility`);
  await page.getByLabel('Default projects limit').fill('lots');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('#setting_default_projects_limit_error').waitFor();
  const settingError = await page.locator('#setting_default_projects_limit_error').textContent();
  check(settingError.includes('default_projects_limit is invalid'), 'a bad value shows the API\'s validation error inline');
  await shoot(page, 'admin-settings');
  await page.getByLabel('Default projects limit').fill('42');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.waitForURL(/done=saved/);
  check(await page.getByText('Application settings saved successfully').isVisible(), 'a good value is saved');
  check(await page.getByLabel('Default projects limit').inputValue() === '42', 'the saved value is shown');
  // An enumerated setting is a select of the catalog's values.
  await page.getByLabel('Default project visibility').selectOption({ label: 'Internal' });
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.waitForURL(/done=saved/);
  check(await page.getByLabel('Default project visibility').inputValue() === 'internal', 'an enumerated value picked from a select is saved');

  // Create a user: a refusal shows next to its field, then the user is made and listed.
  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.waitForURL(`${base}/admin/users`);
  await page.getByRole('link', { name: 'New user' }).click();
  await page.waitForURL(`${base}/admin/users/new`);
  const login = `console-${Date.now()}`;
  await page.getByLabel('Name', { exact: true }).fill('Console Made');
  await page.getByLabel('Username').fill(admin);
  await page.getByLabel('Email').fill(`${login}@example.com`);
  await page.getByRole('button', { name: 'Create user' }).click();
  await page.locator('#user_username_error').waitFor();
  check((await page.locator('#user_username_error').textContent()).includes('has already been taken'), 'a taken username is refused next to the field');
  await shoot(page, 'admin-user-new');
  await page.getByLabel('Username').fill(login);
  await page.getByRole('button', { name: 'Create user' }).click();
  await page.waitForURL(/done=created/);
  check(await page.getByText('User was successfully created.').isVisible(), 'user created');
  await page.goto(`${base}/admin/users`);
  check(await page.getByRole('cell', { name: login, exact: true }).isVisible(), 'the new user is in the list');

  // Block a user.
  await shoot(page, 'admin-users');
  await page.goto(`${base}/admin/users/${victimId}`);
  await page.getByRole('button', { name: 'Block', exact: true }).click();
  await page.waitForURL(/done=block/);
  check(await page.getByText('Successfully blocked').isVisible(), 'user blocked');
  check((await page.locator('#user-state').textContent()).includes('blocked'), 'the user shows as blocked');
  const blockedUser = await fetch(`${base}/api/v4/user`, { headers: { 'PRIVATE-TOKEN': authorToken } });
  check(blockedUser.status === 403 || blockedUser.status === 401, 'the blocked user\'s token stops working');
  await shoot(page, 'admin-user');

  // Readable at phone width.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, storageState: await context.storageState() });
  const small = await phone.newPage();
  await small.goto(`${base}/admin/hooks/spam_check`);
  const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 1, 'no sideways scrolling at phone width');
  await shoot(small, 'admin-phone');
  console.log('browser admin console: all steps passed');
} catch (error) {
  console.error(`not ok - ${error.message}`);
  if (page) {
    const main = await page.locator('main').textContent().catch(() => '(no page)');
    console.error(`  on ${page.url()}: ${main.slice(0, 600)}`);
  }
  process.exitCode = 1;
} finally {
  await browser.close();
}
